#!/usr/bin/env python3
"""Medians per row and side of the logs here (N_side.log: kernel_triad_bench JSON lines):
ms, % of 51.6 GB/s, old/new, and per-pair ratios (pairs in run order)."""
import glob, json, re, statistics, sys
d = sys.argv[1] if len(sys.argv) > 1 else "."
runs = {}
for f in sorted(glob.glob(f"{d}/*_*.log"), key=lambda p: int(re.search(r"(\d+)_", p.split("/")[-1]).group(1))):
    side = re.search(r"_(\w+)\.log$", f).group(1)
    for line in open(f):
        if line.startswith("json "):
            j = json.loads(line[5:])
            key = (j["kernel"], j["dtype"], j["shape"])
            runs.setdefault(key, {}).setdefault(side, []).append((j["seconds"], j["bytes"]))
print("| row | old ms | new ms | old/new | of 51.6 GB/s old -> new | runs old/new | new faster in |")
print("|---|---:|---:|---:|---|---|---|")
for key, s in runs.items():
    o = [x[0] for x in s.get("old", [])]; n = [x[0] for x in s.get("new", [])]
    if not o or not n: continue
    b = s["old"][0][1]
    mo, mn = statistics.median(o), statistics.median(n)
    wins = sum(1 for a in o for c in n if c < a)
    print(f"| {' '.join(key)} | {1e3*mo:.3f} ({1e3*min(o):.3f}-{1e3*max(o):.3f}) | {1e3*mn:.3f} ({1e3*min(n):.3f}-{1e3*max(n):.3f}) | {mo/mn:.3f}x | {100*b/mo/51.6e9:.0f}% -> {100*b/mn/51.6e9:.0f}% | {len(o)}/{len(n)} | {wins} of {len(o)*len(n)} old-new pairs |")
