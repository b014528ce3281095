"""A/B of the warm path's whole 99-program run: `trex eval run --bench b4o-orgeval --references
--jobs 1` of two builds (each with its own python/ folder), alternating A B B A ..., N pairs; per
run the wall time (this process's clock around the run) and the CPU of the run and everything
under it (RUSAGE_CHILDREN), and each item's class, compared with the first run's (a verdict that
differs is printed). Prints every pair, the medians, B/A ratios and in how many pairs A was lower.

Usage: python3 run_ab.py DATA_DIR A_BUILD A_PYTHON B_BUILD B_PYTHON [PAIRS] [LIMIT]
(PAIRS default 20; LIMIT the programs per run, default all). Timed in the lane
(flock /work/notes/quiet.lock nice -n -20 ...); prefix `taskset -c 0` for the one-CPU reading.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def one(build, python, data, limit):
    out = tempfile.mkdtemp(prefix="trex-run-ab-")
    try:
        env = dict(os.environ, TREX_DATA_DIR=data, TREX_PYTHON_DIR=python)
        cmd = [os.path.join(build, "trex"), "eval", "run", "--bench", "b4o-orgeval", "--references", "--jobs", "1",
               "--quiet", "--out", out] + (["--limit", str(limit)] if limit else [])
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        verdicts = {}
        with open(os.path.join(out, "results.jsonl")) as f:
            for line in f:
                j = json.loads(line)
                verdicts[str(j["id"])] = j["class"]
        return wall, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime), verdicts
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    if len(sys.argv) not in (6, 7, 8):
        sys.exit(__doc__)
    data, a_build, a_py, b_build, b_py = sys.argv[1:6]
    pairs = int(sys.argv[6]) if len(sys.argv) > 6 else 20
    limit = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    sides = {"A": (a_build, a_py), "B": (b_build, b_py)}
    got = {"A": [], "B": []}
    first = None
    differ = 0
    print("load at start %.2f" % os.getloadavg()[0])
    for i in range(pairs):
        order = "AB" if i % 2 == 0 else "BA"
        r = {}
        for s in order:
            wall, cpu, verdicts = one(*sides[s], data, limit)
            if first is None:
                first = verdicts
                print("programs per run %d" % len(verdicts))
            diff = sorted(k for k in set(first) | set(verdicts) if first.get(k) != verdicts.get(k))
            if diff:
                differ += 1
                print("pair %d %s: %d verdicts differ from the first run's: %s" % (i + 1, s, len(diff), diff[:10]))
            r[s] = (wall, cpu)
            got[s].append(r[s])
        print("pair %2d (%s): A %.1f ms wall %.1f ms CPU, B %.1f ms wall %.1f ms CPU" %
              (i + 1, order, 1e3 * r["A"][0], 1e3 * r["A"][1], 1e3 * r["B"][0], 1e3 * r["B"][1]))
    print("load at end %.2f" % os.getloadavg()[0])
    print("runs whose verdicts differ from the first run's: %d of %d" % (differ, 2 * pairs))
    for k, name in ((0, "wall"), (1, "CPU")):
        a = [x[k] for x in got["A"]]
        b = [x[k] for x in got["B"]]
        lower = sum(1 for x, y in zip(a, b) if x < y)
        print("%s: A median %.1f ms (range %.1f-%.1f), B median %.1f ms (range %.1f-%.1f), B/A %.3f, A lower in %d of %d" %
              (name, 1e3 * statistics.median(a), 1e3 * min(a), 1e3 * max(a), 1e3 * statistics.median(b), 1e3 * min(b),
               1e3 * max(b), statistics.median(b) / statistics.median(a), lower, len(a)))


if __name__ == "__main__":
    main()
