#!/bin/bash
# A/B: base (main b02cfe7 built in /work/wt/attn/.base/build) vs new (branch attn), alternating,
# quiet lane per command. usage: ab17.sh OUTDIR N_KERNEL N_STEP
o=$1; nk=$2; ns=$3; mkdir -p $o
NEW=${NEW:-/tmp/attn/newbin};  # the new build's attention_rate_bench, model_step_bench, trex, trex-full (copied: the tree can be rebuilt meanwhile)
BASE=${BASE:-/work/wt/attn/.base/build}; CFG=/work/wt/attn/configs/model/v4-micro.toml
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
    nice -n 19 $NEW/trex profile analyze $o/step_${v}_$i.json --json > $o/step_${v}_$i.anat.json 2>&1
    rm -f $o/step_${v}_$i.json
  done
done
if [ $ns -gt 0 ]; then for v in base new; do python3 /work/wt/attn/bench/attention_gemm_ratio.py $o/step_${v}_*.anat.json > $o/ratio_$v.log 2>&1; done; fi
for v in base new; do echo "$v kernel mix per CPU second (fwd, bwd):"; grep -h "mix" $o/rate_${v}_*.log | awk '{print $1,$2,$3,$9,$11}' | paste - - ; done > $o/rate_summary.txt
l done
