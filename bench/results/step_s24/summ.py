#!/usr/bin/env python3
"""Per-run medians of the ab.sh runs in DIR: step, forward+backward, optimizer, MFU (397.5 GFLOP a
step, docs/model-transformer.md; peak given), the span totals per step of a few operators and the
gap before each step's first span (zero_grads), plus the per-pair ratios A/B of the step medians."""
import json, sys, glob, os, statistics as st
d, peak = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 411.2
FLOP = 397.5
SPANS = ["moe.route", "optimizer_step", "read_master_weights", "embed"]
rows = {}
for log in sorted(glob.glob(os.path.join(d, "step_*_*.log"))):
    v, r = os.path.basename(log)[5:-4].split("_")
    try:
        j = json.load(open(log))
    except Exception as e:
        print(log, "unreadable", e); continue
    tr = log[:-4] + ".json"
    spans = {}
    if os.path.exists(tr):
        t = json.load(open(tr))
        ev = t["traceEvents"] if isinstance(t, dict) else t
        for e in ev:
            if e.get("ph") == "X" and e.get("name") in SPANS:
                spans[e["name"]] = spans.get(e["name"], 0) + e["dur"] / 1e3 / 3
        # The step's start to its first embedding: zero_grads (not traced itself).
        steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
        embeds = sorted(e["ts"] for e in ev if e.get("name") == "embed")
        gaps = []
        for p in steps:
            after = [x for x in embeds if x >= p["ts"]]
            if after: gaps.append((after[0] - p["ts"]) / 1e3)
        if gaps: spans["zero_grads_gap"] = st.median(gaps)
    ms = j["median_step_s"]
    rows[(v, int(r))] = ms
    print(f"{v} {r}: step {ms:.3f} s (runs {' '.join(f'{x:.3f}' for x in j['step_times_s'])}) fb {j['median_forward_backward_s']:.3f}"
          f" opt {1e3*j['median_optimizer_s']:.1f} ms fb_cpu {j['median_forward_backward_cpu_s']:.2f} s"
          f" MFU {100*FLOP/(ms*peak):.1f}% losses {j['losses'][-1]!r} "
          + " ".join(f"{k} {v:.1f}ms" for k, v in spans.items()))
rs = sorted({r for (_, r) in rows})
ratios = [rows[("A", r)] / rows[("B", r)] for r in rs if ("A", r) in rows and ("B", r) in rows]
if ratios:
    print("A/B step ratios:", " ".join(f"{x:.3f}" for x in ratios), "median", f"{st.median(ratios):.3f}")
    for v in "AB":
        m = st.median([rows[(v, r)] for r in rs if (v, r) in rows])
        print(f"{v}: median of run medians {m:.3f} s -> MFU {100*FLOP/(m*peak):.1f}% of {peak}")
