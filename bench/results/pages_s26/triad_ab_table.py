#!/usr/bin/env python3
"""Table of triad_ab.sh runs: per case, huge vs 4 KiB medians of ms, of the paired triad GB/s and of_triad."""
import json, sys, glob, statistics as st
runs = {}
for f in sorted(glob.glob(sys.argv[1] + ".*.txt")):
    lines = open(f).read().splitlines()
    huge = lines[0].split()[3]
    for l in lines:
        if l.startswith("json "):
            j = json.loads(l[5:])
            runs.setdefault((j["kernel"], j["dtype"]), {}).setdefault(huge, []).append(j)
print("| case | ms huge | ms 4K | 4K/huge time | triad GB/s huge | 4K | of triad huge | 4K |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
ratios = []
for (k, d), by in runs.items():
    if "1" not in by or "0" not in by: continue
    m = lambda h, key: st.median(x[key] for x in by[h])
    r = m("0", "seconds") / m("1", "seconds"); ratios.append(r)
    print(f"| {k} {d} | {1e3*m('1','seconds'):.3f} | {1e3*m('0','seconds'):.3f} | {r:.2f} | {m('1','triad')/1e9:.1f} | {m('0','triad')/1e9:.1f} | {100*m('1','of_triad'):.0f}% | {100*m('0','of_triad'):.0f}% |")
print(f"median 4K/huge time ratio over {len(ratios)} cases: {st.median(ratios):.3f} (range {min(ratios):.2f}-{max(ratios):.2f})")
