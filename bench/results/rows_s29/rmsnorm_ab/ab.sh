#!/bin/sh
# old (75704c6, /work/wt/rows29-base/build) and new (rows29) kernel_triad_bench alternating, one
# lock hold per run, nice -20 lane: kernel_triad_bench --paired 5 rmsnorm.bwd
# (--triad/--peak given: no start probe; the paired rounds time their own triad).
OUT=${OUT:-.}
i=0
for side in old new new old old new new old; do
  i=$((i+1))
  b=/work/wt/rows29-base/build; [ $side = new ] && b=/work/wt/rows29/build
  { echo "load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n -20 $b/kernel_triad_bench --triad 51.6 --peak 230 --paired 5 rmsnorm.bwd
    echo "load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"; } > $OUT/${i}_$side.log 2>&1
done
