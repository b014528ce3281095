#!/bin/bash
# abstep.sh OUT N: traced v4-micro steps, base (lead's ea826cd build) vs new (2526a5a), alternating, quiet lane
o=$1; n=$2; mkdir -p $o; CFG=/work/wt/attn/configs/model/v4-micro.toml
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
for i in $(seq 1 $n); do for v in base new; do
  flock /work/notes/quiet.lock env TREX_THREADS=2 /tmp/attn/${v}bin/model_step_bench $CFG --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_${v}_$i.json > $o/step_${v}_$i.log 2>&1
  l step $v $i
  nice -n 19 /work/wt/attn/build/trex profile analyze $o/step_${v}_$i.json --json > $o/step_${v}_$i.anat.json 2>&1
  rm -f $o/step_${v}_$i.json
done; done
for v in base new; do python3 /work/wt/attn/bench/attention_gemm_ratio.py $o/step_${v}_*.anat.json > $o/ratio_$v.log 2>&1; done
l done
