#!/bin/bash
# A/B: base (main 8d3d561 kernels = 1929176's) vs new (branch attn), alternating, quiet lane per command.
# usage: ab.sh OUTDIR N_KERNEL N_STEP
o=$1; nk=$2; ns=$3; mkdir -p $o
NEW=/work/wt/attn/build; BASE=/work/wt/attn/.base/build; CFG=/work/wt/attn/configs/model/v4-micro.toml
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
for i in $(seq 1 $nk); do
  for v in base new; do
    B=$BASE; [ $v = new ] && B=$NEW
    flock /work/notes/quiet.lock env TREX_THREADS=2 $B/attention_rate_bench --rounds 7 > $o/rate_${v}_$i.log 2>&1
    l rate $v $i
  done
done
for i in $(seq 1 $ns); do
  for v in base new; do
    B=$BASE; [ $v = new ] && B=$NEW
    flock /work/notes/quiet.lock env TREX_THREADS=2 $B/model_step_bench $CFG --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_${v}_$i.json > $o/step_${v}_$i.log 2>&1
    l step $v $i
    $NEW/trex profile analyze $o/step_${v}_$i.json --json > $o/step_${v}_$i.anat.json 2>&1
  done
done
for v in base new; do python3 /work/wt/attn/bench/attention_gemm_ratio.py $o/step_${v}_*.anat.json > $o/ratio_$v.log 2>&1; done
l done
