#!/usr/bin/env python3
# Session 16 (engineer aura), kept by fixer fix25: the README "Goal (c)" per-space paragraph (start or built-in within
# 3%, and the hindsight oracle seed). Usage: python3 rescue.py REPLAY_LOG TABLE [REPLAY_LOG TABLE ...]. A record, as run.
import sys, re, subprocess, statistics as st, collections
import os
# per counted 48/40-point space: min(start, built-in) over best (the replay's first table, all passes'
# median), and whether another shape's whole-table best would be within 3% (the oracle seed).
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'transfer.py')).read().split('for path in sys.argv[1:]:')[0])
for log, path in zip(sys.argv[1::2], sys.argv[2::2]):
    first = {}
    for line in open(log):
        f = [x.strip() for x in line.split('|')]
        if len(f) > 6 and f[1] in ('cross_entropy', 'mhc.pre_bwd') and 'x' in f[2] and re.match(r'^\d', f[3]) and (f[1], f[2]) not in first:
            first[(f[1], f[2])] = (float(f[4]), float(f[5]))
    out = []; fixed_ok = rescue = need = 0
    for kern in ('cross_entropy', 'mhc.pre_bwd'):
        T = load(path, kern)
        for s, m in T.items():
            b, stt = first[(kern, s)]
            if min(b, stt) <= 1.03: fixed_ok += 1; continue
            need += 1
            others = [m.get(min(T[o], key=T[o].get), 9) for o in T if o != s]
            if min(others) <= 1.03: rescue += 1
            out.append(f"{kern} {s} start {stt:.2f} builtin {b:.2f} others' best {','.join(f'{x:.2f}' for x in others)}")
    print(f"{path.split('/')[-1]}: start or built-in within 3% on {fixed_ok} of 8; of the other {need}, an oracle seed (another shape's true best) would be within 3% on {rescue}")
    for o in out: print('   ', o)
