"""A/B of whole `trex eval run` runs that differ only in their environment (issue 19): on the 99
Bench4Opt ORGEval reference programs (`--bench b4o-orgeval --references`), A and B alternate,
the order swapped every pair (A B, B A, ...), so that load drifts hit both; the verdicts of both
are compared item for item.

A and B are comma-separated NAME=VALUE lists added to this process's environment, e.g.
TREX_PYTHON_DIR=DIR (another state of python/ on the same binary), TREX_COPY_AHEAD=0,
TREX_SANDBOX_ENTER_LIB=LIB. CPU is every process under this one: this process is their
subreaper (PR_SET_CHILD_SUBREAPER) and waits for any orphan before it reads RUSAGE_CHILDREN.

One name is not put in the environment: BUILD=DIR runs that side's trex from DIR instead of
BUILD_DIR (an A/B of two builds: the launcher there picks the program it runs). LIMIT, when
given, adds `--limit LIMIT` to every run (`1`: one program, i.e. a run's fixed cost).

Usage: python3 bench/oreval_env_ab.py BUILD_DIR PAIRS JOBS A B [LIMIT]   (DATA: $TREX_DATA_DIR, else /work/shared/data)
Prints each run, then the medians (wall, CPU and page faults per program: minor and major faults
of every process waited for under this one), the per-pair CPU ratios B/A and how many verdicts
differ.
Timed: run it in the quiet lane (flock /work/notes/quiet.lock nice -n 0 ...).
"""
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def environment(pairs):
    out = {}
    for pair in filter(None, pairs.split(",")):
        name, sep, value = pair.partition("=")
        if not sep or not name:
            sys.exit("not NAME=VALUE: %r" % pair)
        out[name] = value
    return out


def children_cpu():
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def children_faults():
    """Page faults (minor and major) of every waited-for process under this one: on this
    project's PVM machine each traps through the hypervisor, so they are a count of work that
    load does not change."""
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_minflt + c.ru_majflt


def reap_all():
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run(build, jobs, extra, limit):
    out = tempfile.mkdtemp(prefix="trex-env-ab-")
    try:
        extra = dict(extra)
        build = os.path.abspath(extra.pop("BUILD", build))
        env = dict(os.environ, **extra)
        env.setdefault("TREX_DATA_DIR", "/work/shared/data")
        args = [os.path.join(build, "trex"), "eval", "run", "--bench", "b4o-orgeval", "--references", "--jobs", jobs,
                "--out", out, "--quiet"] + (["--limit", limit] if limit else [])
        c0, f0, t0 = children_cpu(), children_faults(), time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
        reap_all()
        wall, cpu, faults = time.perf_counter() - t0, children_cpu() - c0, children_faults() - f0
        verdicts = {}
        with open(os.path.join(out, "results.jsonl")) as f:
            for line in f:
                j = json.loads(line)
                verdicts[str(j["id"])] = j["class"]
        return wall, cpu, faults, verdicts
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    build, pairs, jobs = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    limit = sys.argv[6] if len(sys.argv) == 7 else ""
    envs = {"A": environment(sys.argv[4]), "B": environment(sys.argv[5])}
    if ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit("PR_SET_CHILD_SUBREAPER failed")
    runs, verdicts = {"A": [], "B": []}, {}
    for i in range(pairs):
        for k in ("A", "B") if i % 2 == 0 else ("B", "A"):
            load = os.getloadavg()[0]
            wall, cpu, faults, v = run(build, jobs, envs[k], limit)
            runs[k].append((wall, cpu, faults))
            if verdicts.setdefault(k, v) != v:
                print("%s: verdicts changed between runs" % k)
            print("pair %d %s wall %.2f s CPU %.1f ms/program faults %.0f/program load %.1f" %
                  (i, k, wall, 1000 * cpu / len(v), faults / len(v), load), flush=True)
    n = len(verdicts["A"])
    differ = sorted(k for k in verdicts["A"] if verdicts["A"][k] != verdicts["B"].get(k))
    ratios = [b[1] / a[1] for a, b in zip(runs["A"], runs["B"])]
    med = {k: (statistics.median(r[0] for r in runs[k]), 1000 * statistics.median(r[1] for r in runs[k]) / n,
               statistics.median(r[2] for r in runs[k]) / n) for k in runs}
    print("A median wall %.2f s CPU %.1f ms/program %.0f faults/program; B %.2f s %.1f ms %.0f faults; CPU ratio B/A per pair %s "
          "median %.3f, B lower in %d/%d; verdicts differ %d of %d %s" %
          (med["A"][0], med["A"][1], med["A"][2], med["B"][0], med["B"][1], med["B"][2], " ".join("%.3f" % r for r in ratios),
           statistics.median(ratios), sum(r < 1 for r in ratios), len(ratios), len(differ), n, differ))


if __name__ == "__main__":
    main()
