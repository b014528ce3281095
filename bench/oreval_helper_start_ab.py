"""A/B of the solve helper's start (issue 19): two `trex-solve-helper` programs started
alternately, each start up to the point where the helper reads its first byte and refuses its
arguments (it exits 124 on a bad one, after every set-up a real solve also makes: its own
relocation, the C and C++ libraries' and COIN-OR's static initialisers, closing descriptors,
rlimits), so what is measured is the exec every solve pays before any model is read.

Each pair runs N starts of A and N of B, the order swapped every pair (A B, B A, ...), so that
load drifts hit both. CPU and page faults are those of the waited-for children (getrusage).

Usage: python3 bench/oreval_helper_start_ab.py HELPER_A HELPER_B [PAIRS [N]]   (defaults 9, 20)
Prints per pair the CPU ms per start of each and their ratio B/A, then the medians.
Timed: run it in the quiet lane (flock /work/notes/quiet.lock nice -n 0 ...).
"""
import resource
import statistics
import subprocess
import sys


def starts(helper, n):
    """CPU ms and page faults per start of `helper`, over `n` starts."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        p = subprocess.run([helper, "bad"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if p.returncode != 124:
            sys.exit("%s bad: exit %d, not 124 (not a solve helper?)" % (helper, p.returncode))
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return 1000 * cpu / n, (c1.ru_minflt - c0.ru_minflt + c1.ru_majflt - c0.ru_majflt) / n


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__.strip().splitlines()[-3])
    a, b = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    if pairs < 1 or n < 1:
        sys.exit("PAIRS and N must be at least 1")
    results = {a: [], b: []}
    ratios = []
    for i in range(pairs):
        order = (a, b) if i % 2 == 0 else (b, a)
        got = {h: starts(h, n) for h in order}
        for h in (a, b):
            results[h].append(got[h])
        ratios.append(got[b][0] / got[a][0])
        print("pair %d: A %.2f ms %.0f faults, B %.2f ms %.0f faults, B/A %.3f" %
              (i + 1, got[a][0], got[a][1], got[b][0], got[b][1], ratios[-1]), flush=True)
    for name, h in (("A", a), ("B", b)):
        print("%s %s: median %.2f ms CPU, %.0f faults per start" %
              (name, h, statistics.median(c for c, _ in results[h]), statistics.median(f for _, f in results[h])))
    print("pair ratios B/A: median %.3f, B lower in %d of %d" %
          (statistics.median(ratios), sum(r < 1 for r in ratios), len(ratios)))


if __name__ == "__main__":
    main()
