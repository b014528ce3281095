#!/usr/bin/env python3
"""train_ab.sh's runs in DIR: per run, the losses (A and B must agree bit for bit), and per step
after the first the optimizer spans (optimizer_step, bf16_to_params: the widening pass B drops)
and metrics' optimizer_s; medians over steps 2..4 of each run, then over the runs."""
import json, sys, glob, os, statistics as st
d = sys.argv[1]
per = {"A": [], "B": []}
losses = {}
for tr in sorted(glob.glob(os.path.join(d, "train_*_*.json"))):
    v, r = os.path.basename(tr)[6:-5].split("_")
    ev = json.load(open(tr))["traceEvents"]
    steps = sorted((e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    rows = []
    for p in steps[1:]:
        inside = [e for e in ev if e.get("ph") == "X" and p["ts"] <= e["ts"] < p["ts"] + p["dur"]]
        o = sum(e["dur"] for e in inside if e["name"] == "optimizer_step") / 1e3
        w = sum(e["dur"] for e in inside if e["name"] == "bf16_to_params") / 1e3
        rows.append((o, w, o + w))
    met = [json.loads(l) for l in open(os.path.join(d, f"run_{v}_{r}", "metrics.jsonl"))]
    losses[(v, r)] = [m["loss"] for m in met]
    opt_s = st.median([m["optimizer_s"] for m in met[1:]]) * 1e3
    m = tuple(st.median(x[i] for x in rows) for i in range(3))
    per[v].append(m + (opt_s,))
    print(f"{v} {r}: optimizer_step {m[0]:.1f} ms  bf16_to_params {m[1]:.1f} ms  sum {m[2]:.1f} ms  metrics optimizer_s {opt_s:.1f} ms  losses {losses[(v, r)]}")
ls = set(tuple(x) for x in losses.values())
print("losses identical across all runs:", len(ls) == 1)
for v in "AB":
    if per[v]:
        print(f"{v}: median over runs: optimizer_step + bf16_to_params {st.median(x[2] for x in per[v]):.1f} ms, optimizer_s {st.median(x[3] for x in per[v]):.1f} ms")
