#!/bin/bash
# Mid-session A/B at nice -20 (others' work gets ~1% of the CPU): old = 08d4e22 (/work/wt/old), lead = main now.
o=${OUT:?}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
n=0; for s in old lead lead old old lead; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 nice -n -20 ./build/kernel_triad_bench --paired 3 kv_compress.fwd kv_compress.bwd mhc.head_fwd mhc.head_bwd mhc.post_fwd mhc.post_bwd > $o/kvmhc_${n}_$s.log 2>&1); l kvmhc $s; done
n=0; for s in old lead lead old; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 nice -n -20 ./build/attention_rate_bench > $o/attn_rate_${n}_$s.log 2>&1); l attn_rate $s; done
l done
