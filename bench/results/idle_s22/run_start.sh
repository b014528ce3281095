#!/bin/bash
# Near-idle start figures, session 22, main 1dd788b, /work/main/build.
o=${OUT:?set OUT to a folder for the logs}; cd "$(dirname "$0")/../../.."
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
./build/trex hw probe --out $o/hw.toml > $o/probe.log 2>&1; l probe
for r in 1 2 3; do
  TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_$r.json > $o/step_$r.log 2>&1
  ./build/trex profile analyze $o/step_$r.json --json > $o/step_$r.anat.json 2>&1; l step_$r
done
python3 bench/attention_gemm_ratio.py $o/step_*.anat.json > $o/attn_ratio.log 2>&1
TREX_THREADS=2 ./build/kernel_triad_bench --paired 9 > $o/triad_paired.log 2>&1; l triad_paired
TREX_THREADS=2 ./build/attention_rate_bench > $o/attn_rate.log 2>&1; l attn_rate
./build/gemm_bench --benchmark_filter='BM_(trex|openblas)_sgemm/' --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 > $o/gemm.log 2>&1; l gemm
TREX_THREADS=2 ./build/serve_bench --clients 1,8 --tokens 256 --repeats 5 > $o/serve_bench.log 2>&1; l serve_bench
/usr/bin/python3 bench/train_vs_torch.py --build build --torch best --out $o/train_vs_torch.md > $o/train_vs_torch.log 2>&1; l torch
l done
