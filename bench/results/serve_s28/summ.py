#!/usr/bin/env python3
# summ.py FILE: medians of ab_step.sh lines per tag and per row count (wall, cpu), and per-round new/old ratios.
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
byround = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 5 or p[1] not in ("old", "new"): continue
    r, tag = p[0], p[1]
    vals = p[5:]
    for k in range(0, len(vals) - 2, 3):
        rows = vals[k].rstrip(':'); wall = float(vals[k+1]); cpu = float(vals[k+2])
        d[(tag, rows)]['wall'].append(wall); d[(tag, rows)]['cpu'].append(cpu)
        byround[(r, rows)][tag] = (wall, cpu)
rowsset = sorted({k[1] for k in d}, key=int)
for rows in rowsset:
    for m in ('wall', 'cpu'):
        o = d[('old', rows)][m]; n = d[('new', rows)][m]
        if not o or not n: continue
        rat = [byround[k]['old'][0 if m == 'wall' else 1] / byround[k]['new'][0 if m == 'wall' else 1]
               for k in byround if k[1] == rows and 'old' in byround[k] and 'new' in byround[k]]
        print(f"rows {rows} {m}: old med {st.median(o):.1f} new med {st.median(n):.1f}  old/new per round med {st.median(rat):.3f} range {min(rat):.3f}-{max(rat):.3f} faster in {sum(x > 1 for x in rat)}/{len(rat)}")
