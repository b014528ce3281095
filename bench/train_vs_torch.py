#!/usr/bin/python3
"""Training tokens/s of trex against the PyTorch implementation of the same model, in one run.

trex: BUILD/model_step_bench (Transformer::forward_backward + in-memory AdamW step, TREX_THREADS).
PyTorch: python/trex_v4_torch.py bench (eager autograd + torch.optim.AdamW, fp32), the
independent implementation the C++ model is cross-checked against, in two setups:
  default  torch.set_num_threads(THREADS), nothing else
  best     the same plus OpenBLAS through LD_LIBRARY_PATH (the OpenMP build when one is installed
           under /usr/lib/x86_64-linux-gnu/openblas-openmp, else the pthread build), one BLAS
           thread pool of THREADS, and glibc malloc told to keep freed memory
           (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_ at glibc's 32 MiB maximum,
           MALLOC_TOP_PAD_); run twice, with OpenMP's default (spinning) wait policy and with
           OMP_WAIT_POLICY=PASSIVE, the faster counting as the best
Same config, sequence (one document), thread count; the MTP block on both sides (--no-mtp: off). Each side: warm-up steps, then the median of --steps step times. MFU = 3 F_fwd tokens /
(time peak) with 3 F_fwd from `trex model info CONFIG --json --seq N` (spec section 13)
and peak the fp32 FMA peak `trex hw probe --json --threads THREADS` measures for THREADS cores.
With --tuning FILE, trex also runs with TREX_TUNING=FILE ("trex tuned"), untuned and tuned
alternating for --rounds rounds (each row's median over all its rounds' steps), so the two share
the machine's load.

  /usr/bin/python3 bench/train_vs_torch.py --build build [--config configs/model/v4-micro.toml]
        [--seq 2048] [--steps 3] [--warmup 1] [--threads 2] [--tuning FILE] [--rounds 1]
        [--interleave] [--torch best,passive,default] [--out bench/results/train_vs_torch.md]
--interleave runs PyTorch's setups in every round too (trex untuned, trex tuned, PyTorch), so
every side shares the machine's load round by round; each row is then the median over all rounds.
--torch chooses PyTorch's setups (default all three; on a loaded machine the spinning ones take
tens of seconds a step and "passive" is the best, so `--torch passive` keeps the run short).
Each side's figures go to stderr as soon as it finishes.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPENBLAS_DIRS = ["/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-pthread"]


def run_json(argv, env=None, timeout=3600):
    r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"train_vs_torch: {' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--config", default="configs/model/v4-micro.toml")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-mtp", action="store_true", help="without the MTP block on both sides")
    ap.add_argument("--tuning", help="also run trex with this tuning file (TREX_TUNING), alternating with the untuned runs")
    ap.add_argument("--rounds", type=int, default=1, help="trex untuned/tuned alternations (each --steps steps)")
    ap.add_argument("--interleave", action="store_true",
                    help="run PyTorch's setups in every round, after trex's (default: once, after all rounds)")
    ap.add_argument("--torch", default="best,passive,default",
                    help="PyTorch setups to run: best (spinning OpenMP), passive, default")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/train_vs_torch.md"))
    args = ap.parse_args()
    setups = args.torch.split(",")
    if not setups or any(x not in ("best", "passive", "default") for x in setups) or \
            not ({"best", "passive"} & set(setups)):
        ap.error("--torch: a comma list of best, passive, default with best or passive in it")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.tuning and not os.path.isfile(args.tuning):
        ap.error(f"--tuning {args.tuning}: no such file")
    build = os.path.abspath(args.build)
    trex, step_bench = os.path.join(build, "trex"), os.path.join(build, "model_step_bench")
    for p in (trex, step_bench):
        if not os.access(p, os.X_OK):
            sys.exit(f"train_vs_torch: {p} not built (ninja -C {args.build} trex model_step_bench)")
    load_before = os.getloadavg()

    info = run_json([trex, "model", "info", args.config, "--json", "--seq", str(args.seq)])
    mtp = not args.no_mtp
    train_flops = info["training_flops_per_token"]["trex"]["mtp_on" if mtp else "mtp_off"]
    with tempfile.TemporaryDirectory() as tmp:
        probe = run_json([trex, "hw", "probe", "--json", "--threads", str(args.threads),
                          "--out", os.path.join(tmp, "hw.toml")])
    peak = probe["peak_flops_fp32_all_cores"]

    common = ["--seq", str(args.seq), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if mtp:
        common.append("--mtp")
    runs = {}
    env = dict(os.environ, TREX_THREADS=str(args.threads))
    trex_sides = [("trex", env)]
    if args.tuning:
        trex_sides.append(("trex tuned", dict(env, TREX_TUNING=os.path.abspath(args.tuning))))
    torch_cmd = ["/usr/bin/python3", "python/trex_v4_torch.py", "bench", "--config", args.config,
                 "--threads", str(args.threads)] + common
    blas = next((d for d in OPENBLAS_DIRS if os.path.isdir(d)), None)
    best_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
                    MALLOC_TRIM_THRESHOLD_=str(1 << 36), MALLOC_MMAP_THRESHOLD_=str(1 << 25),
                    MALLOC_TOP_PAD_=str(1 << 30))
    if blas:
        best_env["LD_LIBRARY_PATH"] = blas + (":" + os.environ["LD_LIBRARY_PATH"] if "LD_LIBRARY_PATH" in os.environ else "")
    # OpenMP threads spin at barriers by default; on a machine shared with other work, yielding
    # (OMP_WAIT_POLICY=PASSIVE) can be much faster. The faster of the two is PyTorch's best.
    torch_envs = {"best": ("torch best", best_env),
                  "passive": ("torch best, passive OpenMP", dict(best_env, OMP_WAIT_POLICY="PASSIVE")),
                  "default": ("torch default", dict(os.environ))}
    torch_sides = [torch_envs[x] for x in ("best", "passive", "default") if x in setups]

    def record(name, r):
        if name in runs:
            for key, value in r.items():
                if isinstance(value, list) and key != "losses":
                    runs[name][key].extend(value)
            runs[name]["rounds"].append(r)
        else:
            runs[name] = dict(r, rounds=[r], **{k: list(v) for k, v in r.items() if isinstance(v, list)})

    # With --interleave every round runs PyTorch's setups too, right after trex's sides, so all
    # sides share the machine's load round by round; otherwise PyTorch runs once, after all rounds.
    for rnd in range(args.rounds):
        for name, side_env in trex_sides:
            r = run_json([step_bench, args.config] + common, env=side_env)
            print(f"{name}: median step {r['median_step_s']:.3f} s, steps {r['step_times_s']}, "
                  f"fwd+bwd CPU {r['median_forward_backward_cpu_s']:.3f} s, load {os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)
            record(name, r)
        if args.interleave or rnd == args.rounds - 1:
            for name, torch_env in torch_sides:
                r = run_json(torch_cmd, env=torch_env)
                print(f"{name}: median step {r['median_step_s']:.3f} s, steps {r['step_times_s']}, "
                      f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
                record(name, r)
    for merged in runs.values():
        merged["median_step_s"] = statistics.median(merged["step_times_s"])
        merged["tokens_per_s"] = args.seq / merged["median_step_s"]
        for key in ("forward_backward_s", "optimizer_s", "forward_backward_cpu_s"):
            if key in merged:
                merged["median_" + key] = statistics.median(merged[key])
    load_after = os.getloadavg()

    rows = []
    for name, r in runs.items():
        tps = r["tokens_per_s"]
        rows.append((name, r["median_step_s"], tps, train_flops * tps / peak, r["step_times_s"]))
    t_trex = runs["trex"]["tokens_per_s"]
    best_name = max((k for k in ("torch best", "torch best, passive OpenMP") if k in runs),
                    key=lambda k: runs[k]["tokens_per_s"])
    ratio_best = t_trex / runs[best_name]["tokens_per_s"]
    ratio_tuned = runs["trex tuned"]["tokens_per_s"] / runs[best_name]["tokens_per_s"] if args.tuning else None
    ratio_default = t_trex / runs["torch default"]["tokens_per_s"] if "torch default" in runs else None

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blas_note = ("OpenMP build" if blas and blas.endswith("openmp") else
                 "pthread build (no OpenMP build of OpenBLAS is installed here: Debian's "
                 "libopenblas0-openmp is not in scripts/install-deps.sh)") if blas else "none found"
    lines = [
        "# Training tokens/s: trex against PyTorch on the same model",
        "",
        f"Written by `bench/train_vs_torch.py` on {now}; {cpu_name()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.1f} before and {load_after[0]:.1f} after (the machine is shared; "
        "a load above the thread count means the figures are pessimistic for both sides).",
        "",
        f"Config `{args.config}` (MTP {'on' if mtp else 'off'} on both sides), one document of {args.seq} tokens per step, "
        f"{args.threads} threads, {args.warmup} warm-up step(s), median of {args.steps} steps"
        + (f" per run (trex: {args.rounds} round(s) untuned/tuned alternating, `TREX_TUNING={args.tuning}`, "
           "median over all rounds' steps). " if args.tuning else ". ") +
        (f"PyTorch's setups ran in every round, after trex's ({args.rounds} rounds interleaved). "
         if args.interleave else "") +
        f"3 F_fwd = {train_flops / 1e6:.1f} MFLOP per token (`trex model info --json`, spec section 13, MTP {'on' if mtp else 'off'}); "
        f"peak = {peak / 1e9:.1f} GFLOP/s fp32 on {args.threads} cores (`trex hw probe --threads "
        f"{args.threads}`). PyTorch {runs[best_name].get('torch', '1.13')} eager, fp32; best setup: "
        f"OpenBLAS {blas_note} via LD_LIBRARY_PATH, OMP/OPENBLAS_NUM_THREADS={args.threads}, glibc "
        "MALLOC_TRIM_THRESHOLD_=2^36, MALLOC_MMAP_THRESHOLD_=2^25 (glibc's maximum), MALLOC_TOP_PAD_=2^30.",
        "",
        "| side | median step (s) | tokens/s | MFU | step times (s) |",
        "|---|---|---|---|---|",
    ]
    for name, med, tps, mfu, times in rows:
        lines.append(f"| {name} | {med:.3f} | {tps:.0f} | {100 * mfu:.1f}% | "
                     + ", ".join(f"{t:.3f}" for t in times) + " |")
    lines += [
        "",
        f"Ratio trex / PyTorch best ({best_name}): **{ratio_best:.2f}x**; "
        + (f"trex / PyTorch default: **{ratio_default:.2f}x**; " if ratio_default is not None else
           f"PyTorch setups run: {args.torch}; ")
        + (f"trex tuned / PyTorch best: **{ratio_tuned:.2f}x**; trex tuned / trex: "
           f"**{runs['trex tuned']['tokens_per_s'] / t_trex:.3f}x**. " if args.tuning else "")
        + "(goal: >= 2.5x against the best setup). trex's step: forward+backward "
        f"{runs['trex']['median_forward_backward_s']:.3f} s, optimizer (AdamW + copy of the master weights) "
        f"{runs['trex']['median_optimizer_s']:.3f} s"
        + (f"; forward+backward CPU time untuned {runs['trex']['median_forward_backward_cpu_s']:.3f} s, tuned "
           f"{runs['trex tuned']['median_forward_backward_cpu_s']:.3f} s (medians over all rounds)." if args.tuning else "."),
        "",
        "Reproduce: `bench/run_train_vs_torch.sh build` (or the command in the script's docstring).",
        "",
    ]
    text = "\n".join(lines)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(text)
    with open(os.path.splitext(args.out)[0] + ".json.tmp", "w") as f:
        json.dump({"runs": runs, "train_flops_per_token": train_flops, "peak": peak,
                   "ratio_best": ratio_best, "ratio_default": ratio_default, "ratio_tuned_best": ratio_tuned,
                   "load_before": load_before, "load_after": load_after}, f)
    os.replace(os.path.splitext(args.out)[0] + ".json.tmp", os.path.splitext(args.out)[0] + ".json")


if __name__ == "__main__":
    main()
