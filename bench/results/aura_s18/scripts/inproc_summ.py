# model_step_bench --tuning-ab JSONs: per file and pooled, the median per-pair ratio untuned / tuned,
# pairs where the tuned step was faster, the arms' medians and fwd+bwd CPU medians, and a sign test
# (two-sided, pairs as coin flips under "no effect"). usage: inproc_summ.py JSON...
import json, sys, statistics as st
from math import comb


def sign_p(k, n):
    tail = sum(comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


pool = {}
for f in sys.argv[1:]:
    d = json.load(open(f))
    r = d['pair_ratios']; k = d['tuned_faster_pairs']
    key = d['tuning_ab'].split('/')[-1]
    pool.setdefault(key, []).append(d)
    print(f"{f.split('/')[-1]} ({key}): {len(r)} pairs, median ratio {st.median(r):.3f}, tuned faster in {k}, "
          f"sign test p {sign_p(k, len(r)):.2f}; median step untuned {d['median_untuned_step_s']:.3f} s, tuned "
          f"{d['median_tuned_step_s']:.3f} s; fwd+bwd CPU {st.median(d['untuned_forward_backward_cpu_s']):.3f} vs "
          f"{st.median(d['tuned_forward_backward_cpu_s']):.3f} s")
for key, ds in pool.items():
    if len(ds) < 2: continue
    r = [x for d in ds for x in d['pair_ratios']]; k = sum(d['tuned_faster_pairs'] for d in ds)
    un = [x for d in ds for x in d['untuned_step_s']]; tu = [x for d in ds for x in d['tuned_step_s']]
    cu = [x for d in ds for x in d['untuned_forward_backward_cpu_s']]; ct = [x for d in ds for x in d['tuned_forward_backward_cpu_s']]
    print(f"pooled {key}: {len(r)} pairs, median ratio {st.median(r):.3f}, tuned faster in {k}, sign test p {sign_p(k, len(r)):.2f}; "
          f"median step {st.median(un):.3f} vs {st.median(tu):.3f} s; fwd+bwd CPU {st.median(cu):.3f} vs {st.median(ct):.3f} s")
