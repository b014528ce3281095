#!/usr/bin/python3
"""The MoE all-to-all inside a training step against raw MPI_Alltoallv, from per-rank traces.

  bench/dist_exchange_trace.py CALIBRATION.toml TRACE.rank0.json TRACE.rank1.json ... [--from-step N]

CALIBRATION is what `mpirun -n R build/dist_bench --out FILE` wrote (latency + bytes / bandwidth
of a bare MPI_Ialltoallv + wait, both ranks starting together after a barrier); the traces are
what `mpirun -n R trex train ... --trace T.json` wrote (T.rank0.json, ...). Every MoE exchange is
traced as a post span ("dist.rows.post", carrying the bytes the rank sends) and a wait span
("dist.rows.wait"), inside the layer's span saying which exchange it is. Exchanges are
collective, so the i-th exchange of every rank is the same one.

Two kinds:
  - not overlapped (moe.combine.exchange: the outputs back; moe.combine_grad.exchange: the
    input gradients back): nothing runs between post and wait. A rank that posts early waits
    for its peers; the last to post measures the transfer itself, so the in-step time of an
    exchange is the smallest post-to-wait-end time over the ranks. Compared with the raw time
    the calibration predicts for the largest per-rank size of that exchange: ratio = raw / in-step
    (1.0 = the raw bandwidth), summed over the exchanges (time-weighted) and as the median.
  - overlapped (moe.dispatch.exchange, moe.dispatch_grad.exchange: the shared expert runs
    between post and wait): the time left to wait after the shared expert is the exchange's
    exposed part. Hidden share = 1 - sum(min(wait, raw)) / sum(raw), with wait the smallest
    wait over the ranks (the last rank to arrive waits only for the transfer's remainder).
Steps before --from-step (default 2) are skipped (first touches, set-up competing).
"""
import json
import statistics
import sys
import tomllib


def load_fit(path):
    with open(path, "rb") as f:
        a2a = tomllib.load(f)["dist_calibration"]["all_to_all"]
    return float(a2a["latency_s"]), float(a2a["bandwidth_Bps"])


def exchanges(path, from_step):
    """[(kind, bytes, post_begin_us, wait_begin_us, wait_end_us)] in order, for steps >= from_step."""
    events = json.load(open(path))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
             for e in events if e["name"].startswith("ProfilerStep#")]
    moe = [e for e in events if e["name"].startswith("moe.") and e["name"].endswith(".exchange")]
    posts = sorted((e for e in events if e["name"] == "dist.rows.post"), key=lambda e: e["ts"])
    waits = sorted((e for e in events if e["name"] == "dist.rows.wait"), key=lambda e: e["ts"])
    if len(posts) != len(waits):
        sys.exit(f"{path}: {len(posts)} posts but {len(waits)} waits")
    out = []
    for p, w in zip(posts, waits):
        step = next((n for b, e, n in steps if b <= p["ts"] <= e), None)
        if step is None or step < from_step:
            continue
        kind = next((m["name"] for m in moe if m["ts"] <= p["ts"] and p["ts"] + p["dur"] <= m["ts"] + m["dur"]), None)
        if kind is None:
            sys.exit(f"{path}: an exchange at {p['ts']} us outside every moe.*.exchange span")
        out.append((kind, p.get("args", {}).get("bytes", 0.0), p["ts"], w["ts"], w["ts"] + w["dur"]))
    return out


def main(argv):
    from_step = 2
    if "--from-step" in argv:
        i = argv.index("--from-step")
        from_step = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) < 3:
        sys.exit(__doc__)
    latency, bandwidth = load_fit(argv[0])
    ranks = [exchanges(p, from_step) for p in argv[1:]]
    n = len(ranks[0])
    if any(len(r) != n for r in ranks) or n == 0:
        sys.exit(f"exchanges per rank differ or none: {[len(r) for r in ranks]}")
    raw = lambda b: latency + b / bandwidth
    plain = {"raw": 0.0, "step": 0.0, "bytes": 0.0, "ratios": [], "count": 0}
    over = {"raw": 0.0, "exposed": 0.0, "wait": 0.0, "between": 0.0, "count": 0}
    for i in range(n):
        kinds = {r[i][0] for r in ranks}
        if len(kinds) != 1:
            sys.exit(f"exchange {i}: ranks disagree on its kind {kinds}")
        kind = kinds.pop()
        size = max(r[i][1] for r in ranks)
        t_raw = raw(size)
        if kind in ("moe.combine.exchange", "moe.combine_grad.exchange"):
            t = min(r[i][4] - r[i][2] for r in ranks) / 1e6
            plain["raw"] += t_raw
            plain["step"] += t
            plain["bytes"] += size
            plain["ratios"].append(t_raw / t)
            plain["count"] += 1
        else:
            wait = min(r[i][4] - r[i][3] for r in ranks) / 1e6
            over["raw"] += t_raw
            over["exposed"] += min(wait, t_raw)
            over["wait"] += wait
            over["between"] += statistics.median((r[i][3] - r[i][2]) / 1e6 for r in ranks)
            over["count"] += 1
    print(f"raw MPI_Alltoallv (dist_bench fit): latency {latency:.3e} s, bandwidth {bandwidth / 1e9:.2f} GB/s")
    if plain["count"]:
        print(f"not overlapped: {plain['count']} exchanges, {plain['bytes'] / plain['count'] / 1e6:.2f} MB per rank "
              f"on average; in-step {plain['step']:.4f} s (effective {plain['bytes'] / plain['step'] / 1e9:.2f} GB/s), "
              f"raw would take {plain['raw']:.4f} s: in-step = {plain['raw'] / plain['step']:.3f} of raw bandwidth "
              f"(median over exchanges {statistics.median(plain['ratios']):.3f})")
    if over["count"]:
        print(f"overlapped with the shared expert: {over['count']} exchanges, shared expert {over['between']:.4f} s, "
              f"wait after it {over['wait']:.4f} s, raw transfer {over['raw']:.4f} s: "
              f"hidden share {1 - over['exposed'] / over['raw']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
