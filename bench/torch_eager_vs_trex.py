#!/usr/bin/python3
"""RMSNorm, limited SwiGLU and unified RoPE: PyTorch eager beside trex's fused kernels, in one run.

Runs `trex kernels bench --json` for the five elementwise kernels (rmsnorm.fwd/.bwd,
swiglu.fwd/.bwd, rope.fwd), reads the shapes it used from its JSON, builds the same tensors in
PyTorch (Debian's torch 1.13, /usr/bin/python3 only) with the same thread count, and times the
eager chains an unfused model runs:
  RMSNorm (weight-free): y = x * rsqrt(mean(x^2, -1) + eps); backward by autograd
  SwiGLU (routed, L = 10): out = silu(min(g, L)) * clamp(u, -L, L) * w[:, None]; autograd
  RoPE (interleaved pairs on the last rd dims, YaRN-free table): slice, view, six products, stack,
       cat; its backward is the inverse rotation, timed as the forward of dy (as trex's is)
Each timing is the median of --reps calls after a warm-up, fresh output tensors every call (what
eager mode allocates). Forward and forward+backward are compared; trex's forward+backward time is
the sum of its fused forward and backward kernels. The ratio torch / trex is the "x PyTorch
eager" figure of the issue (goal: >= 5x). Prints a table and writes --out as JSON.

  /usr/bin/python3 bench/torch_eager_vs_trex.py --trex build/trex [--reps 5] [--out FILE]
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import time

import torch

KERNELS = ["rmsnorm.fwd", "rmsnorm.bwd", "swiglu.fwd", "swiglu.bwd", "rope.fwd"]
EPS = 1e-6
LIMIT = 10.0
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def median_time(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def parse_shape(text):
    """'[4096, 4096]' or '[4096, 8, 512] rope 64' -> ([4096, 8, 512], 64)."""
    dims = [int(v) for v in text[text.index("[") + 1:text.index("]")].split(",")]
    rest = text[text.index("]") + 1:].split()
    rope = int(rest[1]) if len(rest) >= 2 and rest[0] == "rope" else None
    return dims, rope


def rms_fwd(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def swiglu_fwd(g, u, w):
    return torch.nn.functional.silu(g.clamp(max=LIMIT)) * u.clamp(-LIMIT, LIMIT) * w[:, None]


def rope_tables(tokens, rd):
    inv = 10000.0 ** (-torch.arange(0, rd, 2, dtype=torch.float64) / rd)
    ang = torch.arange(tokens, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope_fwd(x, cos, sin):
    tokens, heads, hd = x.shape
    rd = cos.shape[1] * 2
    keep, rot = x[..., :hd - rd], x[..., hd - rd:]
    pairs = rot.reshape(tokens, heads, rd // 2, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]
    c, s = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
    y = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).reshape(tokens, heads, rd)
    return torch.cat((keep, y), dim=-1)


def torch_times(kind, dtype, dims, rope, reps):
    """(forward seconds, forward+backward seconds) of the eager chain."""
    dt = DTYPES[dtype]
    if kind == "rmsnorm":
        x = torch.randn(*dims, dtype=dt)
        dy = torch.randn(*dims, dtype=dt)

        def fwd():
            with torch.no_grad():
                rms_fwd(x)

        def both():
            xr = x.detach().requires_grad_(True)
            rms_fwd(xr).backward(dy)

        return median_time(fwd, reps), median_time(both, reps)
    if kind == "swiglu":
        g = torch.randn(*dims, dtype=dt) * 8
        u = torch.randn(*dims, dtype=dt) * 8
        w = torch.rand(dims[0], dtype=torch.float32).to(dt)
        dh = torch.randn(*dims, dtype=dt)

        def fwd():
            with torch.no_grad():
                swiglu_fwd(g, u, w)

        def both():
            gr, ur, wr = (t.detach().requires_grad_(True) for t in (g, u, w))
            swiglu_fwd(gr, ur, wr).backward(dh)

        return median_time(fwd, reps), median_time(both, reps)
    # RoPE: backward = inverse rotation of dy, the same chain with -sin.
    x = torch.randn(*dims, dtype=dt)
    dy = torch.randn(*dims, dtype=dt)
    cos, sin = rope_tables(dims[0], rope)

    def fwd():
        rope_fwd(x, cos, sin)

    def both():
        rope_fwd(x, cos, sin)
        rope_fwd(dy, cos, -sin)

    return median_time(fwd, reps), median_time(both, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trex", default="build/trex")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="0: trex's default (all CPUs)")
    ap.add_argument("--hw", default="", help="passed to trex kernels bench --hw")
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    cmd = [a.trex, "kernels", "bench", "--json"] + sum((["--kernel", k] for k in KERNELS), [])
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    if a.hw:
        cmd += ["--hw", a.hw]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit("trex kernels bench failed: " + res.stderr.strip())
    tj = json.loads(res.stdout)
    threads = tj["context"]["threads"]
    torch.set_num_threads(threads)
    triad = tj["context"]["triad_bytes_per_s"]

    fused = {}  # (kind, dtype) -> {"fwd": s, "bwd": s, "shape": text, "fwd_bytes": b}
    for r in tj["results"]:
        if not r["valid"]:
            sys.exit(f"trex: {r['kernel']} {r['dtype']} failed its gate: {r.get('problem')}")
        kind, part = r["kernel"].split(".")
        e = fused.setdefault((kind, r["dtype"]), {"shape": r["shape"]})
        e[part] = r["fused_seconds"]
        e[part + "_bytes"] = r["bytes"]

    rows = []
    print(f"{threads} threads; triad {triad / 1e9:.1f} GB/s ({tj['context']['hardware']})")
    print(f"{'op':8} {'dtype':5} {'shape':24} {'torch fwd':>10} {'trex fwd':>9} {'x':>6}"
          f" {'torch f+b':>10} {'trex f+b':>9} {'x':>6} {'torch GB/s':>10}")
    for (kind, dtype), e in fused.items():
        dims, rope = parse_shape(e["shape"])
        tf, tb = torch_times(kind, dtype, dims, rope, a.reps)
        xf = e["fwd"]
        xb = e["fwd"] + (e["bwd"] if "bwd" in e else e["fwd"])  # RoPE's backward is a rotation
        fb_bytes = e["fwd_bytes"] + e.get("bwd_bytes", e["fwd_bytes"])
        row = {"op": kind, "dtype": dtype, "shape": e["shape"], "torch_fwd_s": tf, "trex_fwd_s": xf,
               "fwd_ratio": tf / xf, "torch_fwd_bwd_s": tb, "trex_fwd_bwd_s": xb,
               "fwd_bwd_ratio": tb / xb, "torch_fwd_bwd_gb_per_s": fb_bytes / tb / 1e9,
               "trex_fwd_bwd_gb_per_s": fb_bytes / xb / 1e9}
        rows.append(row)
        print(f"{kind:8} {dtype:5} {e['shape']:24} {tf * 1e3:9.2f}m {xf * 1e3:8.2f}m {tf / xf:5.1f}x"
              f" {tb * 1e3:9.2f}m {xb * 1e3:8.2f}m {tb / xb:5.1f}x {fb_bytes / tb / 1e9:10.1f}")
    out = {"schema_version": 1, "threads": threads, "torch": torch.__version__,
           "triad_bytes_per_s": triad, "reps": a.reps, "rows": rows}
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        import os
        os.replace(tmp, a.out)
    geo = math.exp(sum(math.log(r["fwd_bwd_ratio"]) for r in rows) / len(rows))
    print(f"geometric mean, forward+backward: {geo:.1f}x PyTorch eager")


if __name__ == "__main__":
    main()
