"""Where the wall time of a one-program `trex eval run` goes (its fixed cost, issue 19), from the
timestamps of a few system calls (`strace -f --seccomp-bpf -ttt`: only the traced calls stop, so
the rest runs at full speed; the phases are wall time, on a loaded machine mostly waiting for a
CPU). Phases, each to the next mark: the launcher's exec of the evaluator (trex-eval); its start
(the dynamic loader and the arguments) to the sandbox probe's first fork; the probe, the
workspace check and the module copy to the interpreter's spawn; the interpreter's start, imports
and pyc files to its first fork (the network namespace's probe, trex_sandbox_share_netns); the
rest of its start (the namespace, warm-ups, 2 MB text, the pages' list) to the child it forks
ahead of the first request, just before "ready" (its last fork before the evaluator's first
sendmsg, the request; until session 27 the first fork was taken for this one, which put the
second of these phases into the program's); the program (request, run, solve, compare) to the
report's first fsync; the report's fsyncs; the renames, the interpreter's shutdown and the
evaluator's exit. N runs of `--bench b4o-orgeval --references --jobs 1 --limit 1`; prints
medians and ranges.

Usage: python3 bench/oreval_run_phases.py BUILD_DIR DATA_DIR [RUNS]   (default 9)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PHASES = ["launcher -> evaluator", "evaluator's start (to the probe's fork)",
          "probe, workspace check, module copy (to the spawn)",
          "interpreter start, imports, pyc (to its 1st fork)",
          "netns, warm-ups, text, pages (to the child before ready)", "program (to the 1st fsync)",
          "the report's fsyncs", "renames, shutdown, exit", "total"]


def one_run(build, data_dir):
    out = tempfile.mkdtemp(prefix="trex-phases-")
    log = out + ".strace"
    try:
        subprocess.run(["strace", "-f", "--seccomp-bpf", "-ttt", "-e", "trace=execve,clone,clone3,fsync,exit_group,sendmsg",
                        "-o", log, os.path.join(build, "trex"), "eval", "run", "--bench", "b4o-orgeval", "--references",
                        "--jobs", "1", "--limit", "1", "--quiet", "--out", out],
                       env=dict(os.environ, TREX_DATA_DIR=data_dir), stdout=subprocess.DEVNULL, check=True)
        with open(log) as f:
            lines = [l.split(None, 2) for l in f if len(l.split(None, 2)) == 3]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if os.path.exists(log):
            os.unlink(log)
    main = lines[0][0]
    mine = [(float(t), call) for pid, t, call in lines if pid == main]
    start = mine[0][0]
    full = next(t for t, c in mine[1:] if c.startswith("execve"))
    probe = next(t for t, c in mine if c.startswith("clone("))
    spawn = next(t for t, c in mine if c.startswith("clone3") and "CLONE_VFORK" in c)
    interp = next(pid for pid, t, c in lines if c.startswith('execve("/usr/bin/python3"'))
    first_fork = next(float(t) for pid, t, c in lines if pid == interp and c.startswith("clone("))
    # The first request: the evaluator's first sendmsg (with --jobs 1 its main thread runs the
    # item); the child that takes it was the interpreter's last fork before it.
    request = next(t for t, c in mine if c.startswith("sendmsg"))
    ahead = max(float(t) for pid, t, c in lines if pid == interp and c.startswith("clone(") and float(t) < request)
    syncs = [t for t, c in mine if c.startswith("fsync")]
    end = [t for t, c in mine if c.startswith("exit_group")][-1]
    marks = [start, full, probe, spawn, first_fork, ahead, syncs[0], syncs[-1], end]
    return [1e3 * (b - a) for a, b in zip(marks, marks[1:])] + [1e3 * (end - start)]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    build, data_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) == 4 else 9
    if shutil.which("strace") is None:
        sys.exit("oreval_run_phases.py: strace is not installed")
    rows = [one_run(build, data_dir) for _ in range(runs)]
    print("load (1 min) %.1f, %d runs" % (os.getloadavg()[0], runs))
    for i, name in enumerate(PHASES):
        v = [r[i] for r in rows]
        print("%-62s median %6.1f ms  range %5.1f-%5.1f" % (name, statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()
