#!/usr/bin/python3
"""Lists the system calls that sandboxed programs made, from an `strace -f -o FILE` trace of
`trex eval run`: every call of every process after its successful execve of /usr/bin/python3,
and the calls that failed with an errno (a seccomp refusal shows as ENOSYS, EPERM or EACCES).
This is how the allow-list in src/trex/oreval/seccomp_policy.cc was derived (docs/eval.md).

Usage: seccomp_trace_calls.py TRACE
"""
import collections
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pending, python = set(), set()
    calls, errors = collections.Counter(), collections.Counter()
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            m = re.match(r"(\d+)\s+(?:<\.\.\. )?(\w+)(?:\(| resumed>)", line)
            if not m:
                continue
            pid, name = m.group(1), m.group(2)
            if name == "execve":
                if 'execve("/usr/bin/python3"' in line:
                    pending.add(pid)
                if pid in pending and re.search(r"= 0\s*$", line):
                    pending.discard(pid)
                    python.add(pid)
                    continue
            if pid in python and "<unfinished ...>" not in line:
                calls[name] += 1
                e = re.search(r"= -1 (E\w+)", line)
                if e:
                    errors[(name, e.group(1))] += 1
    print("python processes:", len(python))
    print("calls:", " ".join(sorted(calls)))
    print("failed:", ", ".join("%s %s x%d" % (n, e, c) for (n, e), c in sorted(errors.items())))


if __name__ == "__main__":
    main()
