#!/usr/bin/env python3
# threaddiff.py A.json B.json TOKENS: per-thread CPU (ms) and context switches between two snapshots, grouped
import json, sys, os
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); tokens = int(sys.argv[3]); hz = os.sysconf("SC_CLK_TCK")
rows = []
for t, v in b.items():
    u = a.get(t, [v[0], 0, 0, 0]); d = [(v[i] - u[i]) for i in (1, 2, 3)]
    if any(d): rows.append((int(t), v[0], d[0] / 1e6, d[1], d[2]))
rows.sort(); tot = sum(r[2] for r in rows)
for r in rows: print(f"tid {r[0]} {r[1]:16s} cpu {r[2]:8.1f} ms  {1e3*r[2]/tokens:6.1f} us/token  vcsw {r[3]:6d} ivcsw {r[4]:6d}")
top = sorted(rows, key=lambda r: -r[2])[:2]; rest = tot - sum(r[2] for r in top)
print(f"two busiest threads {sum(r[2] for r in top):.1f} ms, the other threads {rest:.1f} ms = {1e3*rest/tokens:.1f} us/token")
print(f"total {tot:.0f} ms, {1e3*tot/tokens:.1f} us/token over {tokens} tokens")
