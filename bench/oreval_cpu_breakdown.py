"""Where a warm `trex eval run`'s CPU goes per program, machine-wide (issue 19): records one run
of the 99 Bench4Opt ORGEval reference programs under `perf record -a -g -e cpu-clock -c 250000`
(a sample per 0.25 ms of each CPU's time, kernel threads included) with the events
sched_process_fork, sys_enter_prctl and sys_exit_recvmsg, and puts each sample on a process of
the run (by the fork tree from the run's first process: evaluator, warm interpreter, its
children) and on a phase, by its kernel stack and its time: a program's child "waits" until its
request arrives (the first recvmsg it returns from), then makes the rest of the sandbox's layers
until its prctl(PR_SET_SECCOMP), then runs the program; its exit is its do_exit/exit_mmap samples.
The seccomp row counts the filter's load, which perf sees after the prctl's entry. Samples of
processes outside the run are left out, except kernel threads (kworker, ksoftirqd), counted whole:
on a shared machine not all of theirs are this run's.

Usage: python3 bench/oreval_cpu_breakdown.py BUILD_DIR JOBS [PERF_DATA]   (as root; DATA:
$TREX_DATA_DIR, else /work/shared/data). Prints ms of CPU per program by phase, then, for the
child's user time before the program (the "waiting" and "request" user rows), the leading
shared objects and leaf functions of its samples (where that time goes: the interpreter, libc's
malloc, ctypes, json, the sandbox library).
Run it in the quiet lane (flock /work/notes/quiet.lock nice -n 0 ...).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

MS_PER_SAMPLE = 0.25  # -c 250000 ns of cpu-clock
PR_SET_SECCOMP = 22


def record(build, jobs, data_file):
    out = tempfile.mkdtemp(prefix="trex-breakdown-")
    pid_file = os.path.join(out, "root.pid")
    env = dict(os.environ)
    env.setdefault("TREX_DATA_DIR", "/work/shared/data")
    run = ("echo $$ > %s; exec %s eval run --bench b4o-orgeval --references --jobs %s --out %s --quiet" %
           (pid_file, os.path.join(build, "trex"), jobs, os.path.join(out, "run")))
    subprocess.run(["perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-c", "250000", "-e", "sched:sched_process_fork",
                    "-e", "syscalls:sys_enter_prctl", "-e", "syscalls:sys_exit_recvmsg", "-o", data_file, "--", "sh", "-c", run],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    with open(pid_file) as f:
        root = int(f.read())
    programs = sum(1 for _ in open(os.path.join(out, "run", "results.jsonl")))
    subprocess.run(["rm", "-rf", out], check=True)
    return root, programs


def samples_of(data_file):
    text = subprocess.run(["perf", "script", "-i", data_file, "-F", "comm,pid,tid,time,event,trace,ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    header = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
    out, current = [], None
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        m = header.match(line)
        if m and not line.startswith("\t"):
            current = [m.group(1), int(m.group(2)), float(m.group(4)), m.group(5), m.group(6), [], []]
            out.append(current)
        elif current is not None:
            parts = line.split(None, 1)
            if len(parts) >= 2:
                sym, _, dso = parts[1].rpartition(" (")
                current[5].append(sym.split("+")[0] if sym else parts[1])
                current[6].append(os.path.basename(dso.rstrip(")")) if sym else "?")
    return out


def has(stack, *names):
    return any(any(n in s for n in names) for s in stack)


LAYER_CALLS = [("layer: descriptors (close_range)", ("close_range",)), ("layer: Landlock", ("landlock",)),
               ("layer: seccomp filter load", ("seccomp",)), ("layer: rlimits", ("setrlimit", "prlimit64")),
               ("layer: setgroups/setgid/setuid", ("setuid", "setgid", "setgroups"))]


def phase(comm, pid, t, stack, roles):
    interpreters, children, run, request_at, seccomp_at = roles
    if pid in children:
        if has(stack, "do_exit", "exit_mmap", "do_group_exit", "exit_mm"):
            return "child's exit (exit_mmap)"
        waiting = pid not in request_at or t < request_at[pid]
        before = pid not in seccomp_at or t < seccomp_at[pid]
        for name, calls in LAYER_CALLS:
            if not waiting and has(stack, *calls) and (before or name.startswith("layer: seccomp")):
                return name
        where = "child, waiting" if waiting else "child, request" if before else "program, runner, finish()"
        if has(stack, "asm_exc_page_fault", "handle_mm_fault"):
            return where + ": page faults"
        if has(stack, "entry_SYSCALL_64", "asm_sysvec", "asm_common_interrupt", "ret_from_fork", "schedule_tail"):
            return where + ": calls, interrupts"
        return where + ": user"
    if pid in interpreters:
        if has(stack, "copy_process", "dup_mm", "kernel_clone", "copy_page_range"):
            return "interpreter: fork"
        return "interpreter: loop, survey, its faults, reap, start-up"
    if pid in run:
        if comm.startswith("trex-solve-hel"):
            return "solve helper"
        return "evaluator and launcher (with their start)"
    if comm.startswith(("kworker", "ksoftirq")):
        return "kernel threads (machine-wide)"
    return None


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    build, jobs = os.path.abspath(sys.argv[1]), sys.argv[2]
    data_file = sys.argv[3] if len(sys.argv) == 4 else os.path.join(tempfile.gettempdir(), "trex-breakdown.data")
    root, programs = record(build, jobs, data_file)
    samples = samples_of(data_file)
    parent, comm_of, request_at, seccomp_at = {}, {}, {}, {}
    for comm, pid, t, event, trace, _, _ in samples:
        if event.startswith("sched:sched_process_fork"):
            m = re.search(r"pid=(\d+) child_comm=\S+ child_pid=(\d+)", trace)
            if m:
                parent[int(m.group(2))] = int(m.group(1))
        elif event.startswith("syscalls:sys_exit_recvmsg"):
            request_at.setdefault(pid, t)
        elif event.startswith("syscalls:sys_enter_prctl"):
            m = re.search(r"option: (0x[0-9a-f]+)", trace)
            if m and int(m.group(1), 16) == PR_SET_SECCOMP:
                seccomp_at.setdefault(pid, t)
        elif event.startswith("cpu-clock"):
            comm_of[pid] = comm  # the last name: after its exec

    def in_run(p):
        for _ in range(32):
            if p == root:
                return True
            if p not in parent:
                return False
            p = parent[p]
        return False

    run = {p for p in set(parent) | {root} if in_run(p)}
    forks = collections.Counter(parent[p] for p in run if p in parent)
    interpreters = {p for p in run if forks[p] >= 5 and comm_of.get(p, "").startswith("python3")}
    children = {p for p in run if parent.get(p) in interpreters}
    roles = (interpreters, children, run, request_at, seccomp_at)
    table = collections.Counter()
    leaves = {"child, waiting: user": collections.Counter(), "child, request: user": collections.Counter()}
    objects = {name: collections.Counter() for name in leaves}
    for comm, pid, t, event, _, stack, dsos in samples:
        if event.startswith("cpu-clock"):
            name = phase(comm, pid, t, stack, roles)
            if name:
                table[name] += 1
            if name in leaves and stack:
                leaves[name]["%s [%s]" % (stack[0], dsos[0])] += 1
                objects[name][dsos[0]] += 1
    print("%d programs, %d interpreter(s), %d children; ms of CPU per program:" % (programs, len(interpreters), len(children)))
    for name in sorted(table):
        print("%-62s %7.2f" % (name, table[name] * MS_PER_SAMPLE / programs))
    print("%-62s %7.2f" % ("total", sum(table.values()) * MS_PER_SAMPLE / programs))
    for name in leaves:
        print("%s, by shared object, then by leaf function (ms per program):" % name)
        for key, n in objects[name].most_common(6):
            print("  %-70s %6.3f" % (key, n * MS_PER_SAMPLE / programs))
        for key, n in leaves[name].most_common(12):
            print("  %-70s %6.3f" % (key[:70], n * MS_PER_SAMPLE / programs))


if __name__ == "__main__":
    main()
