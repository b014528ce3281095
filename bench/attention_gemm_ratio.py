#!/usr/bin/env python3
"""Issue 15's "sparse attention at least 80% of the GEMM rate", read from traced steps.

For each `trex profile analyze TRACE --json` output given (a .anat.json file), prints the matmul
category's rate (its kernels' FLOPs over their time) and the rates of attn.sparse_attention
(forward) and attn.sparse_attention_backward against it; with several files, the medians too.

  TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 \
      --warmup 1 --mtp --trace T.json
  build/trex profile analyze T.json --json > T.anat.json
  bench/attention_gemm_ratio.py T.anat.json [MORE.anat.json ...]
"""
import json
import statistics
import sys

FWD, BWD = "attn.sparse_attention", "attn.sparse_attention_backward"


def ratios(path):
    with open(path) as f:
        d = json.load(f)
    ks = {k["name"]: k for k in d["kernels"]}
    mm = [k for k in d["kernels"] if k["category"] == "matmul"]
    mm_rate = sum(k["flops"] for k in mm) / sum(k["total_us"] for k in mm) / 1e3  # GFLOP/s
    out = {"matmul_gflops": mm_rate}
    for key, name in (("fwd", FWD), ("bwd", BWD)):
        if name not in ks or not ks[name]["flops"]:
            raise SystemExit(f"{path}: no {name} with FLOPs in the kernels")
        rate = ks[name]["flops"] / ks[name]["total_us"] / 1e3
        out[key + "_gflops"], out[key] = rate, rate / mm_rate
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: attention_gemm_ratio.py ANAT.json [ANAT.json ...]", file=sys.stderr)
        return 2
    rows = []
    for p in argv[1:]:
        try:
            r = ratios(p)
        except (OSError, ValueError, KeyError) as e:
            print(f"{p}: {e}", file=sys.stderr)
            return 2
        rows.append(r)
        print(f"{p}: matmul {r['matmul_gflops']:.1f} GFLOP/s; attention fwd {r['fwd_gflops']:.1f} "
              f"({r['fwd']:.3f}), bwd {r['bwd_gflops']:.1f} ({r['bwd']:.3f})")
    if len(rows) > 1:
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"medians of {len(rows)}: matmul {med['matmul_gflops']:.1f} GFLOP/s; fwd ratio "
              f"{med['fwd']:.3f}, bwd ratio {med['bwd']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
