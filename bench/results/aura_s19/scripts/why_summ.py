#!/usr/bin/env python3
# Summarises `aura_search_bench --why` logs (why.sh): the "poor" cells (model's start and built-in
# both > 3% off the de-noised best, half budget >= 2: the only cells where a skill can save one of
# tune's first evaluations), classified by cause:
#   noise: two exhaustive runs of the space itself (split passes) disagree by more than 3%, so
#          "within 3% of the best" is a draw of the table, not a property of the configuration;
#   no transfer: no other shape's de-noised best lands within 3% here under any transfer
#          (the oracle), so no representation of "the best there" can seed this search;
#   prior: an oracle within 3% exists but the prior (from whole tables) predicts the start or a
#          configuration more than 3% off, or an unstable one (not measured).
# Per cause, the evaluations to come within 3% (sums over cells of the median over seeds, the
# log's de-noised table): cold, guided by the other shapes' recorded searches, by their tables.
# usage: why_summ.py LOG...   (prints one line per poor cell and the tallies)
import sys


def rows(path):
    on = False
    for l in open(path):
        if l.startswith('| kernel | shape | poor |'):
            on = True
            continue
        if on and l.startswith('|---'):
            continue
        if on and l.startswith('| '):
            yield [x.strip() for x in l.strip().strip('|').split('|')]
        elif on:
            on = False


def prediction(text):
    # "N skills; consensus ...; prediction CONFIG R (stable: measured)" or "= the start" / "no skills"
    if 'prediction = the start' in text or text == 'no skills':
        return None, False
    tail = text.split('prediction ', 1)[1]
    cfg, rest = tail.split(' ', 1)
    r = float(rest.split(' ', 1)[0])
    return r, 'stable: measured' in rest


def evals(path):
    out = {}
    on = False
    for l in open(path):
        if l.startswith('| kernel | shape | space | de-noised best'):
            on = True
            continue
        if on and l.startswith('|---'):
            continue
        if on and l.startswith('| '):
            c = [x.strip() for x in l.strip().strip('|').split('|')]
            out[(c[0], c[1])] = (float(c[7]), float(c[8].split(',')[0]), float(c[9].split(',')[0]))
        elif on:
            on = False
    return out


tally = {}
sums = {}
print('| table | space | built-in / best | start / best | split | oracle | shapes within 3% | prior (tables): prediction | prior (searches): prediction | seeded (seeds) | evals to 3%: cold, guided by searches, by tables | cause |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
for f in sys.argv[1:]:
    name = f.split('/')[-1].rsplit('.', 1)[0]
    ev = evals(f)
    for c in rows(f):
        if c[2] != 'yes':
            continue
        split, oracle = float(c[5]), float(c[9])
        pt, st = prediction(c[6])
        ps, ss = prediction(c[7])
        if split > 1.03:
            cause = 'noise'
        elif oracle > 1.03:
            cause = 'no transfer'
        elif pt is None or pt > 1.03 or not st:
            cause = 'prior'
        else:
            cause = 'seeded right'
        tally[cause] = tally.get(cause, 0) + 1
        e = ev[(c[0], c[1])]
        acc = sums.setdefault(cause, [0.0, 0.0, 0.0])
        for k in range(3):
            acc[k] += e[k]
        fmt = lambda r, s: 'start' if r is None else f"{r:.3f} ({'measured' if s else 'unstable'})"
        print(f'| {name} | {c[0]} {c[1]} | {c[3]} | {c[4]} | {split:.3f} | {oracle:.3f} | {c[10].split(",")[0]} | '
              f'{fmt(pt, st)} | {fmt(ps, ss)} | {c[8]} | {e[0]:g}, {e[1]:g}, {e[2]:g} | {cause} |')
print()
for k, (a, b, c) in sorted(sums.items()):
    print(f'{k}: {tally[k]} cells, evaluations to 3% cold {a:g}, guided by searches {b:g} ({b / a:.2f}), by tables {c:g} ({c / a:.2f})')
print('poor cells by cause: ' + ', '.join(f'{k} {v}' for k, v in sorted(tally.items())) + f' (total {sum(tally.values())})')
