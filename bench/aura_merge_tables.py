#!/usr/bin/python3
# aura_merge_tables.py A B [C ...] OUT: one table whose passes are A's, then B's, then C's ...
# (same spaces and configurations); the value column is the median of all passes. '#' lines of
# every input are kept, marked with their repeat (a, b, c, ...). Written under a temporary name,
# then renamed.
import os, statistics, sys


def load(p):
    rows, heads = {}, []
    for no, line in enumerate(open(p), 1):
        if line.startswith('#'):
            heads.append(line)
            continue
        f = line.split()
        if not f:
            continue
        if len(f) < 6:
            sys.exit('%s:%d: expected KERNEL SHAPE CONFIG PASSED SECONDS PASS...' % (p, no))
        rows[(f[0], f[1], f[2])] = (int(f[3]), [float(x) for x in f[5:]])
    return rows, heads


if len(sys.argv) < 4:
    sys.exit('usage: aura_merge_tables.py A B [C ...] OUT')
tables = [load(p) for p in sys.argv[1:-1]]
out_path = sys.argv[-1]
first = tables[0][0]
for p, (rows, _) in zip(sys.argv[2:-1], tables[1:]):
    if rows.keys() != first.keys():
        sys.exit('%s: holds other configurations than %s' % (p, sys.argv[1]))
with open(out_path + '.tmp', 'w') as out:
    for i, (_, heads) in enumerate(tables):
        for h in heads:
            out.write(h.rstrip('\n') + ' (repeat %s)\n' % chr(ord('a') + i))
    for k in first:  # A's order
        ps, ok_all = [], True
        for rows, _ in tables:
            passed, v = rows[k]
            ok_all = ok_all and passed
            ps += v
        ok = [x for x in ps if x > 0]
        med = statistics.median(ok) if ok else 0
        out.write('%s %s %s %d %.9g %s\n' % (k[0], k[1], k[2], int(ok_all), med, ' '.join('%.9g' % x for x in ps)))
os.rename(out_path + '.tmp', out_path)
