#!/usr/bin/env python3
"""The per-call cost of GEMM's micro-kernel, from the kc moves of saved aura_search_bench tables.

Each micro-kernel call computes one MR x NR tile over one depth block of KC. If a call costs its
FMAs plus a fixed c (reading and writing its C tile, filling and draining its accumulator chains),
a tile costs k t_step + ceil(k / KC) c, with t_step = 2 MR NR / (the micro-kernel's FMA rate) per
depth step. For every configuration at kc and the same one at the deepest kc of the space (all
other parameters equal, one micro-kernel), the ratio r of their times (each pass divided by its
level, then the median over passes) gives c = k t_step (r - 1) / (ceil(k / kc) - r ceil(k / deepest)).

The FMA rate of 12 x 32 (ukernel 3) is the probe's one-core AVX-512 rate given on the command
line. Every other micro-kernel's rate is the one the table measures for it: that rate times the
space's best 12 x 32 time over the best time of the micro-kernel (each the best levelled median
over the other parameters). On sessions 8-11's one-thread tables 6 x 16 (ukernel 2) runs at
0.99-1.05 of 12 x 32's speed, not at the probe's AVX2 rate (half), which session 16's first fit
used and which doubled its per-call time.

Printed per space: the rate ratio and, per kc, the median over the pairs in ns; then per
micro-kernel the median over every space of kc 64 and 128 (the largest effects) and of kc 256
and 384, in ns and in ns per 64-byte line of the C tile, and the per-line cost that fits both
micro-kernels' kc 64/128 medians (least squares through zero: no fixed part).

Usage: aura_gemm_call_cost.py TABLE:FLOPS_AVX512 ...
  (one core's AVX-512 FMA rate from the table's hardware description: flops_fp32_one_core)
Bad input (a missing or unreadable table, a malformed row or argument): one line, exit 2.
Session 16: bench/results/aura_s16/README.md.
"""
import collections
import math
import statistics as st
import sys

TILES = {'3': (12, 32), '2': (6, 16)}  # ukernel -> MR x NR
PROG = 'aura_gemm_call_cost.py'


class BadInput(Exception):
    pass


def lines_of(uk):
    mr, nr = TILES[uk]
    return mr * math.ceil(nr * 4 / 64)


def load(path):
    spaces = collections.OrderedDict()
    try:
        f = open(path)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}")
    with f:
        for no, line in enumerate(f, 1):
            if line.startswith('#') or not line.strip():
                continue
            fields = line.split()
            if fields[0] != 'gemm':
                continue
            try:
                if fields[3] != '1':
                    continue
                config = dict(kv.split('=') for kv in fields[2].split(';'))
                int(config['kc'])
                passes = [float(x) for x in fields[5:]]
                shape = [int(d) for d in fields[1].split('x')]
                if len(shape) != 3 or not passes:
                    raise ValueError
            except (IndexError, ValueError, KeyError):
                raise BadInput(f"{path}:{no}: malformed gemm row (expected: gemm MxNxK kc=..;.. OK MEDIAN PASSES...)")
            spaces.setdefault(fields[1], []).append((config, passes))
    return spaces


def levelled_medians(path, shape, rows):
    passes = len(rows[0][1])
    if any(len(ps) != passes for _, ps in rows):
        raise BadInput(f"{path}: space gemm {shape}: rows with different numbers of passes")
    med = [st.median(ps) for _, ps in rows]
    level = [st.median([ps[p] / med[i] for i, (_, ps) in enumerate(rows)]) for p in range(passes)]
    return {tuple(sorted(c.items())): st.median([ps[p] / level[p] for p in range(passes)]) for c, ps in rows}


def main(args):
    if not args or any(a in ('-h', '--help') for a in args):
        print(__doc__, file=sys.stderr)
        return 2 if not args else 0
    pooled = collections.defaultdict(list)  # (ukernel, kc) -> per-space medians
    for arg in args:
        path, _, f512 = arg.rpartition(':')
        try:
            flops3 = float(f512)
            if not path or not flops3 > 0:
                raise ValueError
        except ValueError:
            raise BadInput(f"{arg}: expected TABLE:FLOPS_AVX512 (a positive number)")
        for shape, rows in load(path).items():
            k = int(shape.split('x')[2])
            m = levelled_medians(path, shape, rows)
            best = {}
            for c, t in m.items():
                uk = dict(c).get('ukernel')
                best[uk] = min(best.get(uk, t), t)
            if '3' not in best:
                continue
            kcs = sorted({int(dict(c)['kc']) for c in m})
            deepest = kcs[-1]
            for uk, (mr, nr) in TILES.items():
                if uk not in best:
                    continue
                rate = flops3 * best['3'] / best[uk]
                t_step = 2 * mr * nr / rate
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
                        pooled[(uk, kc)].append(st.median(cs))
                if out:
                    print(f"{path.split('/')[-1]} {shape} ukernel {uk} (rate {rate / flops3:.3f} of 12 x 32's) "
                          f"against kc {deepest}, ns a call: {', '.join(out)}")
    fit = []
    for uk in sorted(TILES):
        for kcs, what in (((64, 128), 'kc 64 and 128'), ((256, 384), 'kc 256 and 384')):
            v = [x for kc in kcs for x in pooled.get((uk, kc), [])]
            if not v:
                continue
            per_kc = ', '.join(f"kc {kc} {st.median(pooled[(uk, kc)]):.1f} ({len(pooled[(uk, kc)])})"
                               for kc in kcs if pooled.get((uk, kc)))
            print(f"ukernel {uk} ({TILES[uk][0]} x {TILES[uk][1]}, {lines_of(uk)} lines): median over {what} of "
                  f"every space: {st.median(v):.1f} ns ({len(v)} values, {min(v):.0f} to {max(v):.0f}; {per_kc}), "
                  f"{st.median(v) / lines_of(uk):.2f} ns a line")
            if kcs == (64, 128):
                fit.append((lines_of(uk), st.median(v)))
    if len(fit) > 1:
        per_line = sum(n * c for n, c in fit) / sum(n * n for n, _ in fit)
        print(f"per line, no fixed part (least squares over the kc 64/128 medians): {per_line:.2f} ns; "
              + ', '.join(f"{n} lines {per_line * n:.1f} ns" for n, _ in fit))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(2)
