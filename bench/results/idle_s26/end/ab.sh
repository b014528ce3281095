#!/bin/bash
# End-of-session near-idle A/B: old = /work/wt/old/build (session start 23c9aaf), new = /work/wt/lead/build (final main).
o=${OUT:?}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
step() { local b=$1 r=$2
  ( cd /work/wt/$b && TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${b}_$r.json > $o/${b}_$r.log 2>&1 && ./build/trex profile analyze $o/${b}_$r.json --json > $o/${b}_$r.anat.json 2>&1 ); l $b $r; }
l start
for r in 1 2 3; do if (( r % 2 )); then step old $r; step lead $r; else step lead $r; step old $r; fi; done
for s in old lead; do python3 /work/wt/lead/bench/attention_gemm_ratio.py $o/${s}_*.anat.json > $o/attn_ratio_$s.log 2>&1; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 ./build/kernel_triad_bench --paired 2 > $o/triad_${n}_$s.log 2>&1); l triad $s; done
for s in old lead; do (cd /work/wt/$s && TREX_THREADS=2 ./build/attention_rate_bench > $o/attn_rate_$s.log 2>&1); l attn_rate $s; done
(cd /work/wt/lead && TREX_THREADS=2 ./build/serve_bench --clients 1,8 --tokens 256 --repeats 5 > $o/serve_lead.log 2>&1); l serve4
(cd /work/wt/lead && TREX_THREADS=2 ./build/serve_bench --clients 1,8 --tokens 256 --repeats 5 --stream-interval 1 > $o/serve_lead_i1.log 2>&1); l serve1
l done
