#!/usr/bin/python3
# cal_summ.py LOG...: sums over the replay logs of `aura_search_bench --calibrate` (session 27).
# Per group of spaces (all; separable: two exhaustive runs agree within 3%; with room: the cold
# search needs more than one evaluation; poor: start and built-in both > 3% off with a half budget
# >= 2, session 18's cells), the sum over spaces of the median over seeds of evaluations to 3%:
# cold, guided by the prior from recorded searches (the --loo table), and the calibrated searches
# (root / hedge / ranked, fitted to recorded searches s or whole tables t); and the counted spaces
# (half budget >= 2) whose half budget found one on every seed. One line per group; --cells adds
# the poor cells one by one.
import sys

cells_wanted = '--cells' in sys.argv
logs = [a for a in sys.argv[1:] if not a.startswith('--')]
if not logs:
    sys.exit('usage: cal_summ.py [--cells] LOG...')
rows = []
for path in logs:
    guided, section = {}, None
    for line in open(path):
        if line.startswith('| kernel | shape | space | de-noised best'):
            section = 'loo'
            continue
        if line.startswith('| kernel | shape | space | two exhaustive runs disagree | poor'):
            section = 'cal'
            continue
        if not line.startswith('|'):
            section = None  # a table ends at the first line that is not a row
            continue
        if line.startswith('|---'):
            continue
        f = [x.strip() for x in line.strip().strip('|').split('|')]
        if section == 'loo':
            guided[(f[0], f[1])] = float(f[8].split(',')[0])
        elif section == 'cal':
            half = f[11].split(',')
            flags = half[2].strip().split('/')
            rows.append(dict(
                log=path.split('/')[-1].replace('.log', ''), kernel=f[0], shape=f[1], split=float(f[3]),
                poor=f[4] == 'yes', start=float(f[5]), cal_start=[float(x) for x in f[6].split(',')],
                cold=float(f[7]), guided=guided.get((f[0], f[1]), float('nan')),
                ev=[[float(x) for x in f[k].split(',')] for k in (8, 9, 10)],
                self_start=float(f[14].split(':')[0]),
                counted=int(half[0]) >= 2, half_cold=half[1].strip() == 'y', half_cal=[x == 'y' for x in flags]))
if not rows:
    sys.exit('cal_summ.py: no --calibrate table in ' + ' '.join(logs))
groups = [('all', lambda r: True), ('separable', lambda r: r['split'] <= 1.03),
          ('separable, cold > 1', lambda r: r['split'] <= 1.03 and r['cold'] > 1),
          ('poor', lambda r: r['poor']), ('poor and separable', lambda r: r['poor'] and r['split'] <= 1.03)]
print('| spaces | count | cold | guided by searches | calibrated root: s, t | hedge: s, t | ranked: s, t | '
      'counted (half >= 2) | half found on every seed: cold | root s, t | hedge s, t | ranked s, t | within 3%: '
      'start, calibrated start s, t, fitted to the own table |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for name, keep in groups:
    g = [r for r in rows if keep(r)]
    s = lambda k: sum(r[k] for r in g)
    ev = lambda v, k: sum(r['ev'][v][k] for r in g)
    c = [r for r in g if r['counted']]
    h = lambda i: sum(r['half_cal'][i] for r in c)
    rel = lambda x: '%.1f (%.2f)' % (x, x / s('cold')) if s('cold') else '%.1f' % x
    w = lambda f: sum(f(r) <= 1.03 for r in g)
    print('| %s | %d | %.1f | %s | %s, %s | %s, %s | %s, %s | %d | %d | %d, %d | %d, %d | %d, %d | %d, %d, %d, %d |' % (
        name, len(g), s('cold'), rel(s('guided')), rel(ev(0, 0)), rel(ev(0, 1)), rel(ev(1, 0)), rel(ev(1, 1)),
        rel(ev(2, 0)), rel(ev(2, 1)), len(c), sum(r['half_cold'] for r in c), h(0), h(1), h(2), h(3), h(4), h(5),
        w(lambda r: r['start']), w(lambda r: r['cal_start'][0]), w(lambda r: r['cal_start'][1]),
        w(lambda r: r['self_start'])))
if cells_wanted:
    print('\n| table | kernel | shape | split | start / best | calibrated start / best: s, t, own table | cold | '
          'guided | root s, t | hedge s, t | ranked s, t |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        if r['poor']:
            print('| %s | %s | %s | %.3f | %.3f | %.3f, %.3f, %.3f | %.1f | %.1f | %.1f, %.1f | %.1f, %.1f | %.1f, %.1f |' % (
                r['log'], r['kernel'], r['shape'], r['split'], r['start'], r['cal_start'][0], r['cal_start'][1],
                r['self_start'],
                r['cold'], r['guided'], r['ev'][0][0], r['ev'][0][1], r['ev'][1][0], r['ev'][1][1], r['ev'][2][0],
                r['ev'][2][1]))
