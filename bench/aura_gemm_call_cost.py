#!/usr/bin/env python3
"""The per-call cost of GEMM's micro-kernel, from the kc moves of saved aura_search_bench tables.

Each micro-kernel call computes one MR x NR tile over one depth block of KC. If a call costs its
FMAs plus a fixed c (reading and writing its C tile, filling and draining its accumulator chains),
a tile costs k t_step + ceil(k / KC) c, with t_step = 2 MR NR / (one core's FMA rate) per depth
step. For every configuration at kc and the same one at the deepest kc of the space (all other
parameters equal, one micro-kernel), the ratio r of their times (each pass divided by its level,
then the median over passes) gives c = k t_step (r - 1) / (ceil(k / kc) - r ceil(k / deepest)).
Printed per space and kc: the median over the pairs, in ns; and the median over the listed tables
of every kc of 64 and 128 (the largest effects).

Usage: aura_gemm_call_cost.py TABLE:FLOPS_AVX512:FLOPS_AVX2 ...
  (one core's FMA rates from the table's hardware description: flops_fp32_one_core and the
  avx2 fma_peak's flops_one_core)
Session 16: bench/results/aura_s16/README.md.
"""
import collections
import math
import statistics as st
import sys

TILES = {'3': (12, 32), '2': (6, 16)}  # ukernel -> MR x NR


def load(path):
    spaces = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            fields = line.split()
            if fields[0] != 'gemm' or fields[3] != '1':
                continue
            config = dict(kv.split('=') for kv in fields[2].split(';'))
            spaces.setdefault(fields[1], []).append((config, [float(x) for x in fields[5:]]))
    return spaces


def levelled_medians(rows):
    passes = len(rows[0][1])
    med = [st.median(ps) for _, ps in rows]
    level = [st.median([ps[p] / med[i] for i, (_, ps) in enumerate(rows)]) for p in range(passes)]
    return {tuple(sorted(c.items())): st.median([ps[p] / level[p] for p in range(passes)]) for c, ps in rows}


def main(args):
    if not args:
        sys.exit(__doc__)
    pooled = collections.defaultdict(list)
    for arg in args:
        try:
            path, f512, f256 = arg.rsplit(':', 2)
            flops = {'3': float(f512), '2': float(f256)}
        except ValueError:
            sys.exit(f"aura_gemm_call_cost.py: {arg}: expected TABLE:FLOPS_AVX512:FLOPS_AVX2")
        for shape, rows in load(path).items():
            k = int(shape.split('x')[2])
            m = levelled_medians(rows)
            kcs = sorted({int(dict(c)['kc']) for c in m})
            deepest = kcs[-1]
            for uk, (mr, nr) in TILES.items():
                t_step = 2 * mr * nr / flops[uk]
                out = []
                for kc in kcs[:-1]:
                    cs = []
                    for c, t in m.items():
                        d = dict(c)
                        if int(d['kc']) != kc or d.get('ukernel') != uk:
                            continue
                        d['kc'] = str(deepest)
                        ref = m.get(tuple(sorted(d.items())))
                        if ref is None:
                            continue
                        r = t / ref
                        den = math.ceil(k / kc) - r * math.ceil(k / deepest)
                        if den > 0:
                            cs.append(k * t_step * (r - 1) / den * 1e9)
                    if cs:
                        out.append(f"kc {kc}: {st.median(cs):.0f}")
                        if kc in (64, 128):
                            pooled[uk].append(st.median(cs))
                if out:
                    print(f"{path.split('/')[-1]} {shape} ukernel {uk} against kc {deepest}, ns a call: {', '.join(out)}")
    for uk, v in sorted(pooled.items()):
        print(f"ukernel {uk} ({TILES[uk][0]} x {TILES[uk][1]}): median over kc 64 and 128 of every space: "
              f"{st.median(v):.0f} ns ({len(v)} values, {min(v):.0f} to {max(v):.0f})")


if __name__ == '__main__':
    main(sys.argv[1:])
