#!/usr/bin/env python3
# Session 16 (engineer aura), kept by fixer fix25: the README "Goal (c)" table (others' bests within 3%).
# Usage: python3 transfer.py TABLE... (saved aura_search_bench tables). A record of how the figures were computed, as run.
import sys, statistics as st, collections
# For each counted 48/40-point space (cross_entropy, mhc.pre_bwd): is the best configuration of
# each other shape of the same kernel (same parameter values: both kernels' shapes of one table
# hold the same element count, so absolute = relative to the tensor) within 3% of this space's
# de-noised best? Also: how many configurations lie within 3%, and where the built-in ranks.
def load(path, kern):
    T = collections.OrderedDict()
    for line in open(path):
        if line.startswith('#') or not line.strip(): continue
        f = line.split()
        if f[0] != kern or f[3] != '1': continue
        T.setdefault(f[1], []).append((f[2], [float(x) for x in f[5:]]))
    out = {}
    for shape, rows in T.items():
        P = len(rows[0][1]); med = [st.median(r[1]) for r in rows]
        lev = [st.median([r[1][p] / med[i] for i, r in enumerate(rows)]) for p in range(P)]
        m = {c: st.median([ps[p] / lev[p] for p in range(P)]) for c, ps in rows}
        b = min(m.values()); out[shape] = {c: v / b for c, v in m.items()}
    return out
for path in sys.argv[1:]:
    for kern in ('cross_entropy', 'mhc.pre_bwd'):
        T = load(path, kern)
        hits = 0; tot = 0; rows = []
        for s, m in T.items():
            best_other = {o: min(T[o], key=T[o].get) for o in T if o != s}
            r = [m.get(c, float('nan')) for c in best_other.values()]
            within = sum(1 for v in m.values() if v <= 1.03)
            rows.append(f"{s}: within3%={within}/{len(m)} others' bests here " + ','.join(f"{x:.2f}" for x in r))
            hits += sum(1 for x in r if x <= 1.03); tot += len(r)
        print(f"{path.split('/')[-1][:28]:28s} {kern:13s} other-best within 3%: {hits}/{tot} | " + ' | '.join(rows))
