#!/usr/bin/env python3
"""User CPU seconds of two decode_step_bench builds, alternately (issue 16, session 16's chain_dots A/B).

Each run is `decode_step_bench --rows 8 --repeats 3 --steps 64 --prompt P` on one thread
(TREX_THREADS=1), P in --positions; the rounds alternate OLD and NEW so both see the same load.
CPU time, not wall time: on a shared machine the other processes' load stretches wall time, hardly
the CPU a process uses. Prints each run (with the 1-minute load average) and the medians.

  bench/decode_step_cpu_ab.py OLD_BINARY NEW_BINARY [--rounds 4] [--positions 16,400]

Run from the repository root (decode_step_bench reads configs/model/v4-nano.toml). Exit 2 on bad
arguments or a binary that fails.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--positions", default="16,400")
    a = ap.parse_args()
    try:
        positions = [int(p) for p in a.positions.split(",")]
    except ValueError:
        print(f"error: --positions: '{a.positions}' is not a list of integers", file=sys.stderr)
        return 2
    if a.rounds < 1:
        print("error: --rounds must be at least 1", file=sys.stderr)
        return 2
    env = dict(os.environ, TREX_THREADS="1")
    res = {}
    for _ in range(a.rounds):
        for name, binary in (("old", a.old), ("new", a.new)):
            for p in positions:
                u0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
                t0 = time.time()
                try:
                    subprocess.run([binary, "--rows", "8", "--repeats", "3", "--steps", "64", "--prompt", str(p)],
                                   env=env, capture_output=True, check=True)
                except (OSError, subprocess.CalledProcessError) as e:
                    print(f"error: {binary}: {e}", file=sys.stderr)
                    return 2
                u = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - u0
                res.setdefault((name, p), []).append(u)
                print(name, p, f"load {os.getloadavg()[0]:.1f} user {u:.3f} s wall {time.time() - t0:.2f} s", flush=True)
    for k in sorted(res):
        print(k, "median user", round(statistics.median(res[k]), 3), [round(x, 3) for x in res[k]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
