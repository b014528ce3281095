#!/bin/bash
# End-of-session A/B in the nice -20 lane (lock per item): old = /work/wt/old/build (session start 103e10f),
# new = /work/wt/lead30/build (final main).
o=${OUT:?}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
q() { flock /work/notes/quiet.lock nice -n -20 "$@"; }
dir() { [ $1 = old ] && echo /work/wt/old || echo /work/wt/lead30; }
step() { local b=$1 r=$2
  ( cd $(dir $b) && TREX_THREADS=2 q ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${b}_$r.json > $o/${b}_$r.log 2>&1 && ./build/trex profile analyze $o/${b}_$r.json --json > $o/${b}_$r.anat.json 2>&1 ); l $b $r; }
l start
for r in 1 2 3 4; do if (( r % 2 )); then step old $r; step lead $r; else step lead $r; step old $r; fi; done
for s in old lead; do python3 /work/wt/lead30/bench/attention_gemm_ratio.py $o/${s}_*.anat.json > $o/attn_ratio_$s.log 2>&1; done
l done
