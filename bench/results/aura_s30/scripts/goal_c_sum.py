#!/usr/bin/python3
# goal_c_sum.py LOG [LOG ...]: per replay log of aura_search_bench --loo, the evaluations to
# within 3% of the held-out best, cold against guided (by the other shapes' recorded searches, by
# their tables): per space the medians over seeds and the count with which every seed has one,
# then the sums over every space of every log, and over the spaces whose start misses (cold
# median > 1); and goal (c)'s half budget (spaces found within 3% on every seed, returned on most
# seeds, guided by searches and cold, summed over the logs). With --rows, one line per space as well.
import re
import sys

rows_wanted = '--rows' in sys.argv
logs = [a for a in sys.argv[1:] if a != '--rows']
tot = {}
def add(k, v):
    tot[k] = tot.get(k, 0) + v
half = re.compile(r'half budget, over the (\d+) of \d+ spaces .*guided found within 3% on every seed in (\d+) of \d+ '
                  r'spaces, returned on most seeds in (\d+); cold with the half budget (\d+), (\d+)')
for p in logs:
    head = None
    for line in open(p, errors='replace'):
        h = half.search(line)
        if h:
            for k, v in zip(('half spaces', 'half guided found', 'half guided returned', 'half cold found',
                             'half cold returned'), h.groups()):
                add(k, int(v))
        if line.startswith('| kernel | shape | space | de-noised best'):
            head = [c.strip() for c in line.strip().strip('|').split('|')]
            continue
        if head is None:
            continue
        if not line.startswith('|'):
            head = None
            continue
        f = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(f) != len(head) or f[0] in ('---', 'kernel') or f[0].startswith('-'):
            continue
        cold = float(f[head.index('cold: evals (median)')])
        gs = float(f[head.index('guided by searches: evals, ratio')].split(',')[0])
        gt = float(f[head.index('guided by tables: evals, ratio')].split(',')[0])
        ev = [int(x) for x in f[-1].split(',')]
        add('spaces', 1)
        for k, v in (('cold med', cold), ('searches med', gs), ('tables med', gt), ('cold all', ev[0]),
                     ('searches all', ev[1]), ('tables all', ev[2])):
            add(k, v)
            if cold > 1:
                add('miss ' + k, v)
        if cold > 1:
            add('miss spaces', 1)
        add('searches better all', ev[1] < ev[0]); add('searches worse all', ev[1] > ev[0])
        add('tables better all', ev[2] < ev[0]); add('tables worse all', ev[2] > ev[0])
        if rows_wanted:
            print('%s %s %s: cold %.1f/%d searches %.1f/%d tables %.1f/%d' % (p.split('/')[-1], f[0], f[1], cold, ev[0], gs, ev[1], gt, ev[2]))
for k in sorted(tot):
    print('%-22s %g' % (k, tot[k]))
