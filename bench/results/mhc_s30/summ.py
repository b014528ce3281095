# Medians per row and side of kernel_triad_bench logs (tb*_SIDE_*.log): ms, GB/s, % of 51.6.
import glob, re, statistics, sys
pat = sys.argv[1] if len(sys.argv) > 1 else 'tb2'
rows = {}
for side in ('base', 'new'):
    for f in sorted(glob.glob(f'logs/{pat}_{side}_*.log')):
        for line in open(f):
            if line.startswith('| mhc'):
                c = [x.strip() for x in line.strip('|\n').split('|')]
                rows.setdefault((c[0], c[1]), {}).setdefault(side, []).append((float(c[3]), float(c[4])))
print('| row | base ms | new ms | base/new | GB/s base -> new | of 51.6 base -> new |')
print('|---|---|---|---|---|---|')
for (k, dt), s in sorted(rows.items()):
    b = statistics.median(x[0] for x in s['base']); n = statistics.median(x[0] for x in s['new'])
    gb = statistics.median(x[1] for x in s['base']); gn = statistics.median(x[1] for x in s['new'])
    print(f'| {k} {dt} | {b:.3f} | {n:.3f} | {b/n:.3f}x | {gb:.1f} -> {gn:.1f} | {100*gb/51.6:.0f}% -> {100*gn/51.6:.0f}% |')
