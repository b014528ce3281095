#!/bin/bash
# Idle measurements at session 17's start (lead), main 046e7fd in /work/wt/base/build
cd /work/wt/base; o=/work/notes/s17/idle
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
./build/trex hw probe --out $o/hw.toml > $o/probe1.log 2>&1; l probe1
TREX_THREADS=2 ./build/kernel_triad_bench --min-time 0.4 > $o/triad1.log 2>&1; l triad1
for i in 1 2 3; do
  TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step$i.json > $o/step$i.log 2>&1
  ./build/trex profile analyze $o/step$i.json --json > $o/step$i.anat.json 2>&1; l step$i
done
python3 bench/attention_gemm_ratio.py $o/step*.anat.json > $o/attn_ratio.log 2>&1
TREX_THREADS=2 ./build/kernel_triad_bench --min-time 0.4 > $o/triad2.log 2>&1; l triad2
./build/trex hw probe --out $o/hw2.toml > $o/probe2.log 2>&1; l probe2
bench/run_train_vs_torch.sh build --steps 3 --warmup 1 --rounds 2 --interleave --torch passive > $o/torch.log 2>&1; l torch
cp bench/results/train_vs_torch.md $o/ 2>/dev/null; git checkout -q bench/results/train_vs_torch.md 2>/dev/null
l done
