"""What LD_BIND_NOW=1 (warm_pool.cc starts the warm interpreter with it) buys the interpreter's
children and costs its start (session 30, engineer evalstart; huge_text_ab.py with the sides
changed): per side a fresh /usr/bin/python3, A with LD_BIND_NOW=1, B without, loads the sandbox
library (ctypes), imports the runner and modelling modules
as the zygote does, warms them (5 and 5 rounds, the zygote's), freezes the heap (gc.collect,
gc.freeze), trims malloc, moves python3's code onto 2 MB pages (trex_zygote_huge_text), and forks one child per
Bench4Opt ORGEval reference program (99), which runs it through the runner (record to /dev/null)
and leaves with os._exit, as a warm child does without its sandbox; the parent reaps each with
os.wait4. Sides alternate (A B B A ...), one process each, PAIRS pairs.

Printed per run: the process's own CPU up to its first fork (its start, imports and warm-ups, as
the zygote's start to "ready"), the children's CPU per program (the wait4 rusage, their exit included), their minor faults per program,
and the wall per program (fork to reap).

Usage: /usr/bin/python3 bind_now_ab.py PYTHON_DIR DATA_DIR LIBRARY [PAIRS]   (A = LD_BIND_NOW=1, B = without)
Timed: in the lane (flock /work/notes/quiet.lock nice -n -20 ...)."""
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def programs(data_dir, work):
    base = os.path.join(data_dir, "or-benchmarks", "bench4opt", "slai_trex", "bench4opt")
    folders = []
    with open(os.path.join(base, "test.jsonl")) as f:
        for line in f:
            item = json.loads(line)
            if not item.get("reference_code"):
                continue
            folder = os.path.join(work, str(len(folders)))
            os.makedirs(folder)
            with open(os.path.join(folder, "completion.py"), "w") as out:
                out.write(item["reference_code"])
            if item.get("data_path"):
                shutil.copy(os.path.join(base, item["data_path"]), os.path.join(folder, "data.json"))
            folders.append(folder)
    return folders


def one_config(python_dir, folders, library, huge):
    """In the child process: warm, freeze, trim, huge_text or not, fork a child per program;
    prints one JSON line."""
    import ctypes
    sys.path.insert(0, python_dir)
    import trex_eval_runner
    import trex_eval_warmup
    import trex_modeling  # noqa: F401
    import gurobipy  # noqa: F401
    import coptpy  # noqa: F401
    lib = ctypes.CDLL(library)
    trex_eval_warmup.warm_up(5)
    trex_eval_warmup.warm_up_runner(5)
    gc.collect()
    gc.freeze()
    ctypes.CDLL(None).malloc_trim(0)
    parts = lib.trex_zygote_huge_text()
    warm_cpu = time.process_time()  # everything up to here: the start's CPU
    child_cpu = 0.0
    faults = 0
    wall = 0.0
    for folder in folders:
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.chdir(folder)
                sys.argv = ["trex_eval_runner.py", "completion.py"]
                sys.stdout = io.StringIO()
                code = trex_eval_runner.main(record=os.devnull)
            finally:
                os._exit(code if isinstance(code, int) else 1)
        _, status, usage = os.wait4(pid, 0)
        wall += time.perf_counter() - t0
        if status != 0:
            raise SystemExit("a program failed in %s" % folder)
        child_cpu += usage.ru_utime + usage.ru_stime
        faults += usage.ru_minflt
    n = len(folders)
    print(json.dumps({"start_ms": warm_cpu * 1e3, "parts": parts, "child_ms": child_cpu * 1e3 / n,
                      "faults": faults / n, "wall_ms": wall * 1e3 / n}))


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--one":
        _, _, python_dir, work, library, side = sys.argv
        folders = sorted((os.path.join(work, d) for d in os.listdir(work)), key=lambda p: int(os.path.basename(p)))
        one_config(python_dir, folders, library, True)
        return
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    python_dir, data_dir, library = sys.argv[1:4]
    pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    work = tempfile.mkdtemp(prefix="trex-bind-now-ab-", dir="/dev/shm")
    try:
        programs(os.path.abspath(data_dir), work)
        got = {"A": [], "B": []}
        print("load at start %.2f; A = LD_BIND_NOW=1, B = without" % os.getloadavg()[0])
        for i in range(pairs):
            order = "AB" if i % 2 == 0 else "BA"
            line = []
            for side in order:
                out = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.abspath(__file__), "--one",
                                      os.path.abspath(python_dir), work, os.path.abspath(library), side],
                                     check=True, capture_output=True, text=True,
                                     env=dict(os.environ, LD_BIND_NOW="1") if side == "A" else
                                     {k: v for k, v in os.environ.items() if k != "LD_BIND_NOW"}).stdout
                r = json.loads(out.strip().splitlines()[-1])
                got[side].append(r)
                line.append("%s start %.2f ms CPU (%d parts), child %.3f ms CPU %.0f faults %.3f ms wall" % (
                    side, r["start_ms"], r["parts"], r["child_ms"], r["faults"], r["wall_ms"]))
            print("pair %2d (%s): %s" % (i + 1, order, "; ".join(line)))
        print("load at end %.2f" % os.getloadavg()[0])
        for key in ("start_ms", "child_ms", "faults", "wall_ms"):
            va = [r[key] for r in got["A"]]
            vb = [r[key] for r in got["B"]]
            lower = sum(1 for x, y in zip(va, vb) if x < y)
            ratio = statistics.median(y / x for x, y in zip(va, vb))
            print("%s: pair ratio B/A median %.3f" % (key, ratio))
            print("%s: A median %.3f (%.3f-%.3f), B median %.3f (%.3f-%.3f), B/A %.3f, A lower in %d of %d" % (
                key, statistics.median(va), min(va), max(va), statistics.median(vb), min(vb), max(vb),
                statistics.median(vb) / statistics.median(va), lower, len(va)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
