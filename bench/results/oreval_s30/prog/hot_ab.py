"""Alternating A B B A ... processes of hot_one.py; medians. Usage: hot_ab.py A_PYTHON_DIR B_PYTHON_DIR DATA_DIR PAIRS ROUNDS
(session 30, evalprog: A = the new python/, B = 103e10f's; timed in the lane)"""
import os, subprocess, sys, statistics
if len(sys.argv) != 6:
    sys.exit(__doc__)
a, b, data, pairs, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
got = {"A": [], "B": []}
print("load at start %.2f" % os.getloadavg()[0])
for i in range(pairs):
    for s in ("AB" if i % 2 == 0 else "BA"):
        out = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "hot_one.py"),
                              a if s == "A" else b, data, rounds], capture_output=True, text=True, check=True).stdout
        got[s].append(float(out.split()[-1]))
    print("pair %d: A %.4f B %.4f" % (i + 1, got["A"][-1], got["B"][-1]), flush=True)
print("load at end %.2f" % os.getloadavg()[0])
A, B = got["A"], got["B"]
print("A median %.4f (%.4f-%.4f), B median %.4f (%.4f-%.4f), B/A %.3f, A lower in %d of %d" % (
    statistics.median(A), min(A), max(A), statistics.median(B), min(B), max(B),
    statistics.median(B) / statistics.median(A), sum(x < y for x, y in zip(A, B)), len(A)))
