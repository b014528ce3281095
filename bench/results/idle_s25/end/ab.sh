#!/bin/bash
# Session 25 end, near idle: old (main 2325bd6, /work/wt/old/build) vs new (final main, /work/wt/lead/build).
# Traced v4-micro steps in 6 pairs, the order swapped every pair (s23: the second process of a pair ran
# 5-15% slower); then kernel_triad_bench --paired 3, old/new/new/old.
o=/work/notes/s25/end
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
run_step() {  # side r
  local b=/work/wt/$1/build
  (cd /work/main && TREX_THREADS=2 $b/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/$1_$2.json > $o/$1_$2.log 2>&1)
  $b/trex profile analyze $o/$1_$2.json --json > $o/$1_$2.anat.json 2>&1; rm -f $o/$1_$2.json; l "$1 $2"
}
l start
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then run_step old $r; run_step lead $r; else run_step lead $r; run_step old $r; fi
done
cd /work/main
python3 bench/attention_gemm_ratio.py $o/old_*.anat.json > $o/ratio_old.log 2>&1
python3 bench/attention_gemm_ratio.py $o/lead_*.anat.json > $o/ratio_new.log 2>&1
for s in old lead lead old; do
  TREX_THREADS=2 /work/wt/$s/build/kernel_triad_bench --paired 3 >> $o/triad_$s.log 2>&1; l "triad $s"
done
l done
