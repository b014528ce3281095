#!/bin/bash
# End-of-session A/B in the nice -20 lane (lock per item): old = /work/wt/old/build (session start 7a0a6fd),
# new = /work/wt/lead/build (final main).
o=${OUT:?}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
q() { flock /work/notes/quiet.lock nice -n -20 "$@"; }
step() { local b=$1 r=$2
  ( cd /work/wt/$b && TREX_THREADS=2 q ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${b}_$r.json > $o/${b}_$r.log 2>&1 && ./build/trex profile analyze $o/${b}_$r.json --json > $o/${b}_$r.anat.json 2>&1 ); l $b $r; }
l start
for r in 1 2 3 4; do if (( r % 2 )); then step old $r; step lead $r; else step lead $r; step old $r; fi; done
for s in old lead; do python3 /work/wt/lead/bench/attention_gemm_ratio.py $o/${s}_*.anat.json > $o/attn_ratio_$s.log 2>&1; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 q ./build/kernel_triad_bench --paired 3 > $o/triad_${n}_$s.log 2>&1); l triad $s; done
n=0; for s in old lead lead old old lead; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 q ./build/kernel_triad_bench --paired 5 kv_compress.fwd kv_compress.bwd mhc.head_fwd mhc.head_bwd mhc.post_fwd mhc.post_bwd > $o/kvmhc_${n}_$s.log 2>&1); l kvmhc $s; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 q ./build/attention_rate_bench > $o/attn_rate_${n}_$s.log 2>&1); l attn_rate $s; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 q ./build/decode_step_bench --rows 1,8 --repeats 3 --steps 128 > $o/decode_${n}_$s.log 2>&1); l decode $s; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 q ./build/serve_bench --clients 1,8 --tokens 256 --repeats 7 > $o/serve_${n}_$s.log 2>&1); l serve $s; done
l done
