#!/usr/bin/python3
# aura_merge_tables.py A B OUT: one table whose passes are A's then B's (same spaces and configurations);
# the value column is the median of all passes. '#' lines of both are kept.
import sys, statistics
def load(p):
    rows, heads = {}, []
    for line in open(p):
        if line.startswith('#'): heads.append(line); continue
        f = line.split()
        if not f: continue
        rows[(f[0], f[1], f[2])] = (int(f[3]), [float(x) for x in f[5:]])
    return rows, heads
a, ha = load(sys.argv[1]); b, hb = load(sys.argv[2])
assert a.keys() == b.keys(), "tables hold different configurations"
with open(sys.argv[3] + '.tmp', 'w') as out:
    for h in ha: out.write(h.rstrip('\n') + ' (repeat a)\n')
    for h in hb: out.write(h.rstrip('\n') + ' (repeat b)\n')
    for k in a:  # A's order
        pa, va = a[k]; pb, vb = b[k]
        ps = va + vb
        ok = [x for x in ps if x > 0]
        med = statistics.median(ok) if ok else 0
        out.write('%s %s %s %d %.9g %s\n' % (k[0], k[1], k[2], int(pa and pb), med, ' '.join('%.9g' % x for x in ps)))
import os; os.rename(sys.argv[3] + '.tmp', sys.argv[3])
