#!/usr/bin/env python3
"""Per-run ms a step (total over the 3 traced steps / 3) of the named spans in ab.sh's DIR, for A
and B: the runs side by side, to tell a consistent change from the load's noise.
Usage: spans.py DIR NAME..."""
import json, sys, glob, os
d, names = sys.argv[1], sys.argv[2:]
runs = {}
for tr in sorted(glob.glob(os.path.join(d, "step_*_*.json"))):
    v, r = os.path.basename(tr)[5:-5].split("_")
    ev = json.load(open(tr))["traceEvents"]
    runs[(v, int(r))] = {n: sum(e["dur"] for e in ev if e.get("name") == n) / 3e3 for n in names}
for n in names:
    cols = [" ".join(f"{runs[k][n]:.1f}" for k in sorted(runs) if k[0] == v) for v in "AB"]
    print(f"{n:24s} A {cols[0]} | B {cols[1]}")
