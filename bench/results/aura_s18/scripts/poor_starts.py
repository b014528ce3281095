#!/usr/bin/env python3
# Goal (c) where the start is poor: from `aura_search_bench --loo` replay logs, the spaces that
# goal (c) counts (half budget >= 2) on which both the built-in and the model's start are more than
# 3% off the de-noised best (the goal (a)/(b) table). Only there can skills beat tune's first two
# evaluations (the start, then the built-in as tune's profile), so only there can "half the
# evaluations" show what the skills add. Per space: the evaluations to come within 3% (median over
# seeds) cold, guided by the other shapes' recorded searches, guided by their whole tables (the
# de-noised table), and goal (c)'s found-on-every-seed columns.
# usage: poor_starts.py [--cold-above N] LOG...
# --cold-above N keeps only the cells whose cold median is above N (review raura4 LOW 4: the cells
# are chosen on the all-pass de-noised ratios but the evaluations are counted on each seed's
# held-out judge, so some chosen cells have a cold median of 1-2 where nothing can be saved;
# --cold-above 2 leaves them out).
import sys

args = sys.argv[1:]
cold_above = 0.0
if args[:1] == ['--cold-above']:
    cold_above = float(args[1])
    args = args[2:]


def rows(lines, header):
    on = False
    for l in lines:
        if l.startswith(header):
            on = True
            continue
        if on and l.startswith('|---'):
            continue
        if on and l.startswith('| '):
            yield [x.strip() for x in l.strip().strip('|').split('|')]
        elif on:
            on = False


tot = {'spaces': 0, 'cold': 0.0, 'searches': 0.0, 'tables': 0.0, 'half_guided': 0, 'half_cold': 0}
print('| table | space | built-in / best | start / best | half budget | evals to 3%: cold, guided by searches, by tables | half: guided found, cold found |')
print('|---|---|---|---|---|---|---|')
for f in args:
    lines = open(f).read().split('\n')
    ab = {(c[0], c[1]): (float(c[3]), float(c[4]))
          for c in rows(lines, '| kernel | shape | space | built-in / best | start / best | 15% budget')}
    half = {(c[0], c[1]): (int(c[3].split(',')[1].split()[0]), c[5], c[7])
            for c in rows(lines, '| kernel | shape | space | budget 15%, half')}
    ev = {(c[0], c[1]): (float(c[7]), float(c[8].split(',')[0]), float(c[9].split(',')[0]))
          for c in rows(lines, '| kernel | shape | space | de-noised best')}
    name = f.split('/')[-1].rsplit('.', 1)[0]
    for k, (h, guided, cold) in half.items():
        if h < 2 or k not in ab or ab[k][0] <= 1.03 or ab[k][1] <= 1.03:
            continue
        e = ev[k]
        if e[0] <= cold_above:
            continue
        every = lambda s: s.split('/')[0] == s.split('/')[1]
        tot['spaces'] += 1; tot['cold'] += e[0]; tot['searches'] += e[1]; tot['tables'] += e[2]
        tot['half_guided'] += every(guided); tot['half_cold'] += every(cold)
        print(f'| {name} | {k[0]} {k[1]} | {ab[k][0]:.3f} | {ab[k][1]:.3f} | {h} | {e[0]:g}, {e[1]:g}, {e[2]:g} | {guided}, {cold} |')
s = tot
if s['spaces']:
    print(f"\n{s['spaces']} spaces; evaluations to 3% (sums of the medians): cold {s['cold']:g}, guided by searches "
          f"{s['searches']:g} ({s['searches'] / s['cold']:.2f}), guided by tables {s['tables']:g} ({s['tables'] / s['cold']:.2f}); "
          f"half budget found on every seed: guided {s['half_guided']}, cold {s['half_cold']}")
