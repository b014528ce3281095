#!/usr/bin/env python3
"""Same-code control of triad_ab.sh runs: per arm, the time ratio of its two runs, per case; median and range."""
import json, sys, glob, statistics as st
by = {}
for f in sorted(glob.glob(sys.argv[1] + ".*.txt")):
    lines = open(f).read().splitlines(); huge = lines[0].split()[3]
    by.setdefault(huge, []).append({(j["kernel"], j["dtype"]): j["seconds"] for j in (json.loads(l[5:]) for l in lines if l.startswith("json "))})
for h, runs in sorted(by.items()):
    a, b = runs[0], runs[1]
    r = [b[k] / a[k] for k in a if k in b]
    print(f"arm huge={h}: later/earlier run time ratio median {st.median(r):.3f}, range {min(r):.2f}-{max(r):.2f} over {len(r)} cases")
