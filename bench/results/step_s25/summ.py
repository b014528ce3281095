#!/usr/bin/env python3
"""Per-run medians of the ab.sh runs in DIR: step, forward+backward, optimizer, MFU (397.5 GFLOP a
step, the trex convention of docs/model.md for v4-micro at seq 2048 with MTP; peak given, default
today's probe 452.7), the per-pair ratios A/B of the step medians, and per span name the time a
step spends in it (each run's total over its 3 traced steps / 3; median over the runs of A and of
B), the names with the largest differences first: where the pool change moved time."""
import json, sys, glob, os, statistics as st
from collections import defaultdict
d, peak = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 452.7
FLOP = 397.5
rows, spans = {}, defaultdict(lambda: defaultdict(list))  # spans[name][variant] = [ms/step per run]
for log in sorted(glob.glob(os.path.join(d, "step_*_*.log"))):
    v, r = os.path.basename(log)[5:-4].split("_")
    try:
        j = json.load(open(log))
    except Exception as e:
        print(log, "unreadable", e); continue
    tr = log[:-4] + ".json"
    if os.path.exists(tr):
        t = json.load(open(tr))
        ev = t["traceEvents"] if isinstance(t, dict) else t
        tot = defaultdict(float)
        for e in ev:
            n = str(e.get("name", ""))
            if e.get("ph") == "X" and not n.startswith("ProfilerStep#"):
                tot[n] += e["dur"] / 1e3 / 3
        for n, x in tot.items(): spans[n][v].append(x)
    ms = j["median_step_s"]
    rows[(v, int(r))] = ms
    print(f"{v} {r}: step {ms:.3f} s (runs {' '.join(f'{x:.3f}' for x in j['step_times_s'])}) fb {j['median_forward_backward_s']:.3f}"
          f" opt {1e3*j['median_optimizer_s']:.1f} ms fb_cpu {j['median_forward_backward_cpu_s']:.2f} s"
          f" MFU {100*FLOP/(ms*peak):.1f}% losses {j['losses'][-1]!r}")
rs = sorted({r for (_, r) in rows})
ratios = [rows[("A", r)] / rows[("B", r)] for r in rs if ("A", r) in rows and ("B", r) in rows]
if ratios:
    print("A/B step ratios:", " ".join(f"{x:.3f}" for x in ratios), "median", f"{st.median(ratios):.3f}",
          f"({sum(x > 1 for x in ratios)}/{len(ratios)} pairs B faster)")
    for v in "AB":
        m = st.median([rows[(v, r)] for r in rs if (v, r) in rows])
        print(f"{v}: median of run medians {m:.3f} s -> MFU {100*FLOP/(m*peak):.1f}% of {peak}")
diff = []
for n, by in spans.items():
    if by["A"] and by["B"]:
        a, b = st.median(by["A"]), st.median(by["B"])
        diff.append((a - b, n, a, b))
diff.sort(reverse=True)
print("span ms/step (median of runs): A -> B, A - B; largest gains first, then largest losses")
for x in diff[:15] + [None] + diff[-8:]:
    if x is None: print("  ..."); continue
    g, n, a, b = x
    print(f"  {n:32s} {a:8.2f} -> {b:8.2f}  {g:+7.2f}")
