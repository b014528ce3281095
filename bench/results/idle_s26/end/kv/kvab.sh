#!/bin/bash
o=/work/notes/s26/kvab; mkdir -p $o
for s in old lead lead old old lead; do n=$((n+1)); (cd /work/wt/$s && TREX_THREADS=2 ./build/kernel_triad_bench --paired 5 kv_compress.fwd kv_compress.bwd > $o/${n}_$s.log 2>&1); echo "$(date -u +%T) $(cut -d' ' -f1 /proc/loadavg) $s" >> $o/timeline.txt; done
