#!/usr/bin/env python3
import json, sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    h = line.split(); j = json.loads(line[line.index('{'):])
    arm = h[3]
    rows.setdefault(arm, []).append((int(h[1]), j))
    print(f"pair {h[1]} arm {arm} load {h[5]}-{h[6]} step {j['median_step_s']:.3f} fb {j['median_forward_backward_s']:.3f} fbcpu {j['median_forward_backward_cpu_s']:.3f} opt {j['median_optimizer_s']:.3f} huge {j['anon_huge_pages_kb']//1024}/{j['anon_kb']//1024} MiB loss {j['losses'][-1]:.9f}")
arms = sorted(rows)
for a in arms:
    s = [j['median_step_s'] for _, j in rows[a]]; c = [j['median_forward_backward_cpu_s'] for _, j in rows[a]]
    print(f"arm {a}: step median {st.median(s):.3f} ({min(s):.3f}-{max(s):.3f}), fb cpu median {st.median(c):.3f} ({min(c):.3f}-{max(c):.3f})")
if len(arms) == 2:
    A, B = arms
    pa = {p: j for p, j in rows[A]}; pb = {p: j for p, j in rows[B]}
    rs = [pa[p]['median_step_s'] / pb[p]['median_step_s'] for p in pa if p in pb]
    rc = [pa[p]['median_forward_backward_cpu_s'] / pb[p]['median_forward_backward_cpu_s'] for p in pa if p in pb]
    print(f"pair ratios {A}/{B}: step {' '.join('%.3f'%r for r in rs)} (median {st.median(rs):.3f}); fb cpu {' '.join('%.3f'%r for r in rc)} (median {st.median(rc):.3f})")
