"""What compiling a program costs a warm interpreter's forked child against the same interpreter
itself (issue 19): the Bench4Opt ORGEval reference programs (the 99 with reference code) are
compiled as trex_eval_runner.main compiles them (compile(source, "completion.py", "exec")),
first three times in this process (warm: its pages are its own), then once each in a child
forked from it after gc.collect() and gc.freeze() (as the pool's interpreter forks: every page
the compiler writes is copied on its first write, every new page is faulted in). No sandbox,
no pinned pages: the difference is the first-touch cost that the pool's survey and pinning
(docs/eval.md) try to take off the child.

Usage: python3 bench/oreval_compile_cost.py [DATA_DIR]   (default /work/shared/data)
Prints ms of CPU (user + system, getrusage) and minor page faults per compile.
Timed: run it in the quiet lane (flock /work/notes/quiet.lock nice -n -20 ...).
"""
import gc
import json
import os
import resource
import statistics
import sys


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt


def compile_in_child(source):
    """(ms of CPU, faults) of one compile in a child forked from this process."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t0, f0 = usage()
        compile(source, "completion.py", "exec")
        t1, f1 = usage()
        os.write(w, ("%f %d" % ((t1 - t0) * 1e3, f1 - f0)).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        answer = f.read().split()
    os.waitpid(pid, 0)
    if len(answer) != 2:
        sys.exit("oreval_compile_cost: a child gave no figures")
    return float(answer[0]), int(answer[1])


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data"
    folder = os.path.join(data, "or-benchmarks/bench4opt/slai_trex/bench4opt")
    try:
        with open(os.path.join(folder, "test.jsonl")) as f:
            items = [json.loads(line) for line in f]
    except OSError as e:
        sys.exit("oreval_compile_cost: cannot read the Bench4Opt items: %s" % e)
    sources = [it["reference_code"] for it in items if it.get("reference_code")]
    if not sources:
        sys.exit("oreval_compile_cost: no reference programs in %s" % folder)
    print("%d programs, %d characters on average" % (len(sources), sum(map(len, sources)) // len(sources)))
    for rep in range(3):
        t0, f0 = usage()
        for s in sources:
            compile(s, "completion.py", "exec")
        t1, f1 = usage()
        print("this process, pass %d: %.3f ms CPU and %.1f faults per compile"
              % (rep + 1, (t1 - t0) * 1e3 / len(sources), (f1 - f0) / len(sources)))
    gc.collect()
    gc.freeze()
    child = [compile_in_child(s) for s in sources]
    print("a forked child, one compile each: median %.3f ms CPU (mean %.3f), median %d faults"
          % (statistics.median(c for c, _ in child), statistics.mean(c for c, _ in child),
             statistics.median(f for _, f in child)))


if __name__ == "__main__":
    main()
