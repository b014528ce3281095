"""Python completions scored per second per worker: trex's warm pool against the report's
harness pattern and against trex's own fresh-interpreter path, side by side in one run (issue 19).

On the 99 Bench4Opt ORGEval reference programs (the items of
bench4opt/slai_trex/bench4opt/test.jsonl with reference_code), one worker each, interleaved
per repetition so that load drifts hit every path:

  harness  the report's harness pattern with trex's gurobipy module (standalone mode,
           TREX_BINARY set): a fresh `python3 prog.py` per program, model.lp read back with
           gurobipy.read and compared with the reference LP
           (tests/oreval/python/harness_pattern_check.py's run_item); no sandbox;
  cold     `trex eval run --bench b4o-orgeval --references --jobs 1 --cold-start`: a fresh
           sandboxed interpreter per program;
  warm     the same without --cold-start: each program forked from the worker's warm
           interpreter, every sandbox layer applied in the child;
  warm2    the warm path with --jobs 2, for the rate per core (CPU seconds of trex and every
           process under it);
  warm1    the warm path with --limit 1: one program, i.e. a run's fixed cost (trex's start,
           the warm interpreter's start and warm-ups, the report files), for the line below.

The rates in the table are whole runs' (programs over the wall time of one `trex eval run`), so
a run's fixed cost counts against trex in full: that is the figure the goal is stated in (the
"by whole-run wall" line). With warm1 among the paths a second line also gives the warm path's
rate per program beyond the fixed cost: the fixed cost is the median warm1 run (one program),
and per program (warm - warm1) / (programs - 1) of the medians, which a longer run approaches;
without warm1 that line says it was not measured.

Verdicts: per item, the harness's "same structure" against trex's `correct`, and cold against
warm item for item (error class); any difference is printed.

--module-b DIR adds the paths warmB and warm1B (and warm2B with warm2): warm and warm1 with
TREX_PYTHON_DIR=DIR (another state of python/, e.g. `git archive`d from another commit),
interleaved with the others in each repetition, for an A/B of the module on one binary; their
verdicts are compared too. --lib-b LIB does the same with TREX_SANDBOX_ENTER_LIB=LIB (another
build of libtrex_sandbox_enter.so, whose zygote loop the warm interpreter runs), alone or with
--module-b (then B is both). --env-b NAME=VALUE[,NAME=VALUE...] does the same with those names
in B's environment (e.g. TREX_WORKSPACE=0: the programs' folders under $TMPDIR instead of the
interpreter's workspace tmpfs), alone or with the others. --build-b DIR runs B's trex from the
build folder DIR (another commit's build: an A/B of two binaries), alone or with the others.

--tmpdir DIR runs every path with its temporary folders under DIR (TMPDIR for this process, the
harness's programs and trex): trex's per-program folders and the harness's, the warm
interpreters' module copies. A tmpfs there removes the filesystem's inode work from both sides.

CPU: this process's and its children's (getrusage RUSAGE_SELF + RUSAGE_CHILDREN), which holds a
process's CPU only once its parent has waited for it. This process makes itself the subreaper of
everything under it (PR_SET_CHILD_SUBREAPER), so a process whose parent exits without waiting for
it (orphaned) comes to this one, which waits for it after each run: its CPU is counted too, and
the number of such processes is printed per path (0 when every process was waited for by its own
parent). CPU spent in kernel threads on a process's behalf (a kworker) is not counted.

Usage: /usr/bin/python3 bench/oreval_pool_bench.py DATA_DIR [--reps 3] [--build build] [--paths harness,cold,warm,warm2,warm1] [--tmpdir DIR] [--module-b DIR] [--lib-b LIB] [--env-b NAME=VALUE,...] [--build-b DIR]
Prints a Markdown table (medians over the repetitions) and the load average of each run.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_now():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Orphans under this process come to it (reap_orphans), not to init: their CPU counted."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))


def children_of_this_process():
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        if int(stat[stat.rindex(")") + 2:].split()[1]) == me:
            found.append(int(entry))
    return found


def reap_orphans(seconds=5.0):
    """Waits for the processes that came to this one as orphans during a run (every direct child
    of this one is waited for by subprocess before); returns how many. One still running after
    `seconds` is killed and waited for, and counted."""
    count, until = 0, time.monotonic() + seconds
    while True:
        left = children_of_this_process()
        if not left:
            return count
        for pid in left:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG if time.monotonic() < until else 0)
            except ChildProcessError:
                continue
            if done:
                count += 1
            elif time.monotonic() >= until:
                os.kill(pid, 9)
        time.sleep(0.01)


def run_harness(data_dir, build):
    sys.path.insert(0, os.path.join(REPO, "tests/oreval/python"))
    sys.path.insert(0, os.path.join(REPO, "python"))
    os.environ["TREX_BINARY"] = os.path.join(build, "trex")
    import harness_pattern_check as h
    folder = os.path.join(data_dir, "or-benchmarks/bench4opt/slai_trex/bench4opt")
    with open(os.path.join(folder, "test.jsonl")) as f:
        items = [json.loads(line) for line in f]
    items = [it for it in items if it.get("reference_code")]
    verdicts = {}
    for it in items:
        id_, verdict, _, _ = h.run_item(it, folder, os.path.join(REPO, "python"), it["id"])
        verdicts[id_] = verdict == "same"
    return verdicts


def run_trex(build, data_dir, jobs, cold, limit=None, python_dir=None, lib=None, extra_env=None):
    out = tempfile.mkdtemp(prefix="trex-pool-bench-")
    try:
        cmd = [os.path.join(build, "trex"), "eval", "run", "--bench", "b4o-orgeval", "--references", "--jobs", str(jobs),
               "--out", out, "--quiet"] + (["--cold-start"] if cold else []) + (["--limit", str(limit)] if limit else [])
        env = dict(os.environ, TREX_DATA_DIR=data_dir)
        if python_dir:
            env["TREX_PYTHON_DIR"] = python_dir
        if lib:
            env["TREX_SANDBOX_ENTER_LIB"] = lib
        env.update(extra_env or {})
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        verdicts = {}
        with open(os.path.join(out, "results.jsonl")) as f:
            for line in f:
                j = json.loads(line)
                if j.get("class") != "no-code":
                    verdicts[str(j["id"])] = j["class"]
        return verdicts
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--paths", default="harness,cold,warm,warm2")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--module-b", default=None)
    ap.add_argument("--lib-b", default=None)
    ap.add_argument("--env-b", default=None)
    ap.add_argument("--build-b", default=None)
    a = ap.parse_args()
    if a.build_b and not os.path.isfile(os.path.join(a.build_b, "trex")):
        sys.exit("--build-b %s: holds no trex" % a.build_b)
    env_b = {}
    for pair in filter(None, (a.env_b or "").split(",")):
        name, sep, value = pair.partition("=")
        if not sep or not name:
            sys.exit("--env-b: not NAME=VALUE: %r" % pair)
        env_b[name] = value
    if a.lib_b and not os.path.isfile(a.lib_b):
        sys.exit("--lib-b %s: no such file" % a.lib_b)
    if a.module_b and not os.path.isfile(os.path.join(a.module_b, "gurobipy", "__init__.py")):
        sys.exit("--module-b %s: holds no gurobipy/__init__.py" % a.module_b)
    if a.tmpdir:
        if not os.path.isdir(a.tmpdir):
            sys.exit("--tmpdir %s: not a directory" % a.tmpdir)
        os.environ["TMPDIR"] = os.path.abspath(a.tmpdir)
        tempfile.tempdir = None  # recomputed from TMPDIR
        print("temporary folders under %s" % os.environ["TMPDIR"], file=sys.stderr)
    build = os.path.abspath(a.build)
    # Absolute: the harness runs each program in a temporary folder of its own, where a relative
    # data path (../shared/data) names nothing, so every program failed to read its data and the
    # harness ran 99 failures (about 3.6 s instead of 5) with its verdicts all differing.
    a.data_dir = os.path.abspath(a.data_dir)
    paths = a.paths.split(",")
    if a.module_b or a.lib_b or env_b or a.build_b:
        paths += [p + "B" for p in ("warm", "warm1", "warm2") if p in paths]
    runs = {p: [] for p in paths}
    orphans = {p: 0 for p in paths}
    verdicts = {}
    become_subreaper()
    for rep in range(a.reps):
        for p in paths:
            load0 = os.getloadavg()[0]
            cpu0, t0 = cpu_now(), time.perf_counter()
            if p == "harness":
                v = run_harness(a.data_dir, build)
            else:
                b = p.endswith("B")
                v = run_trex(os.path.abspath(a.build_b) if b and a.build_b else build, a.data_dir, 2 if p.startswith("warm2") else 1, p == "cold", 1 if p.startswith("warm1") else None,
                             os.path.abspath(a.module_b) if b and a.module_b else None,
                             os.path.abspath(a.lib_b) if b and a.lib_b else None, env_b if b else None)
            orphans[p] += reap_orphans()
            wall, cpu = time.perf_counter() - t0, cpu_now() - cpu0
            n = len(v)
            runs[p].append((wall, cpu, n, load0, os.getloadavg()[0]))
            if p in verdicts and verdicts[p] != v:
                print("%s: verdicts changed between repetitions" % p)
            if not p.startswith("warm1"):  # one program: its fixed cost, not a verdict set
                verdicts[p] = v
            print("rep %d %-7s %d programs %.2f s wall, %.1f ms CPU/program, load %.1f -> %.1f" %
                  (rep + 1, p, n, wall, 1000 * cpu / n, load0, os.getloadavg()[0]), file=sys.stderr, flush=True)
    print("orphaned processes waited for by this one (their CPU counted): %s" %
          ", ".join("%s %d" % (p, orphans[p]) for p in paths))
    # Verdicts, item for item.
    trex_paths = [p for p in paths if p not in ("harness", "warm1", "warm1B")]
    for p in trex_paths[1:]:
        diff = sorted(k for k in verdicts[trex_paths[0]] if verdicts[p].get(k) != verdicts[trex_paths[0]][k])
        print("verdicts %s vs %s: %d items, %d differ %s" % (p, trex_paths[0], len(verdicts[p]), len(diff),
                                                          [(k, verdicts[trex_paths[0]][k], verdicts[p].get(k)) for k in diff]))
    if "harness" in verdicts and trex_paths:
        t = verdicts[trex_paths[0]]
        diff = sorted(k for k in verdicts["harness"] if verdicts["harness"][k] != (t.get(k) == "correct"))
        print("verdicts harness (same structure) vs %s (correct): %d items, %d differ %s" %
              (trex_paths[0], len(verdicts["harness"]), len(diff), diff))
    labels = {"harness": "harness pattern: fresh `python3 prog.py` + gurobipy.read + compare, no sandbox",
              "cold": "`trex eval run --jobs 1 --cold-start` (fresh sandboxed interpreter)",
              "warm": "`trex eval run --jobs 1` (warm interpreter, fork + sandbox per program)",
              "warm2": "`trex eval run --jobs 2` (warm)",
              "warm1": "`trex eval run --jobs 1 --limit 1` (warm: one program, the run's fixed cost)",
              "warmB": "`trex eval run --jobs 1`, B (%s)" % ", ".join(x for x in (a.module_b, a.lib_b, a.env_b, a.build_b) if x),
              "warm1B": "`trex eval run --jobs 1 --limit 1`, B",
              "warm2B": "`trex eval run --jobs 2`, B"}
    print("| path | programs | wall s (median) | programs/s | per worker | CPU ms/program | programs per CPU-s | load (1 min, start of each) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    med = {}
    for p in paths:
        wall = statistics.median(r[0] for r in runs[p])
        cpu = statistics.median(r[1] for r in runs[p])
        n = runs[p][0][2]
        jobs = 2 if p.startswith("warm2") else 1
        med[p] = (n / wall / jobs, n / cpu)
        print("| %s | %d | %.2f | %.1f | %.1f | %.1f | %.1f | %s |" %
              (labels[p], n, wall, n / wall, n / wall / jobs, 1000 * cpu / n, n / cpu,
               ", ".join("%.1f" % r[3] for r in runs[p])))
    for p in ("cold", "warm", "warm2", "warmB", "warm2B"):
        if p in med and "harness" in med:
            print("%s / harness: %.2fx per worker by whole-run wall (the goal's figure, docs/eval.md: programs over the "
                  "wall of one whole run, its fixed cost included), %.2fx per CPU-second" %
                  (p, med[p][0] / med["harness"][0], med[p][1] / med["harness"][1]))
    for warm, warm1 in (("warm", "warm1"), ("warmB", "warm1B")):
        if warm in runs and warm1 not in runs and "harness" in med:
            print("%s beyond the fixed cost: not measured (add warm1 to --paths: a --limit 1 run is the fixed cost)" % warm)
        if warm not in runs or warm1 not in runs or "harness" not in med:
            continue
        n = runs[warm][0][2]
        fixed_wall = statistics.median(r[0] for r in runs[warm1])
        fixed_cpu = statistics.median(r[1] for r in runs[warm1])
        wall = (statistics.median(r[0] for r in runs[warm]) - fixed_wall) / (n - 1)
        cpu = (statistics.median(r[1] for r in runs[warm]) - fixed_cpu) / (n - 1)
        # The fixed cost is what a run of one program costs (trex's start, the warm interpreter's
        # start and warm-ups, the report's files); what a longer run approaches per program is
        # the rest of the 99-program run spread over the other 98.
        print("%s beyond the fixed cost (%.3f s wall, %.1f ms CPU per run: the median %s run, --limit 1; per program "
              "(%s - %s) / (programs - 1), medians): %.2f ms wall and %.2f ms CPU per "
              "program, %.1f programs/s per worker: %.2fx the harness per worker (wall), %.2fx per CPU-second" %
              (warm, fixed_wall, 1000 * fixed_cpu, warm1, warm, warm1, 1000 * wall, 1000 * cpu, 1 / wall,
               (1 / wall) / med["harness"][0],
               (1 / cpu) / med["harness"][1]))


if __name__ == "__main__":
    main()
