#!/usr/bin/env python3
# Sums of `aura_search_bench --loo` logs over tables, for two replay folders side by side (e.g.
# main's code and a patched one): evaluations to 3% over every (space, seed) pair (the "| all |"
# row: cold, guided by searches, guided by tables) and goal (c)'s counted spaces found on every
# seed with half the budget, guided and cold.
# usage: sums.py DIR_A DIR_B KEY...   (reads DIR/KEY.log)
import re
import sys


def tot(d, keys):
    c = s = t = 0
    hs = hg = hc = 0
    for k in keys:
        for l in open(f'{d}/{k}.log'):
            if l.startswith('| all |'):
                x = [y.strip() for y in l.strip().strip('|').split('|')]
                c += int(x[3]); s += int(x[4].split(',')[0]); t += int(x[5].split(',')[0])
            m = re.match(r'half budget, over the (\d+) of .*guided found within 3% on every seed in (\d+) of \d+ '
                         r'spaces.*cold with the half budget (\d+),', l)
            if m:
                hs += int(m.group(1)); hg += int(m.group(2)); hc += int(m.group(3))
    return c, s, t, hs, hg, hc


if len(sys.argv) < 4:
    sys.exit('sums.py: usage: sums.py DIR_A DIR_B KEY...')
for d in sys.argv[1:3]:
    c, s, t, hs, hg, hc = tot(d, sys.argv[3:])
    print(f'{d}: evals to 3% over every space: cold {c}, guided by searches {s} ({s / c:.3f}), by tables {t} '
          f'({t / c:.3f}); goal (c) counted spaces {hs}: guided half found on every seed {hg}, cold half {hc}')
