#!/bin/bash
# kernel_triad_bench --paired 5 on the mHC rows, base (7a0a6fd) and new alternating (base, new,
# new, base, ...), each run in the nice -20 lane (its own lock hold), uptime before each run.
#   tb_ab.sh NEW_BUILD OUTDIR PAIRS [KERNEL...]
NEW=${1:?new build}; OUT=${2:?outdir}; PAIRS=${3:-2}; shift 3
K=${@:-mhc.head_bwd mhc.head_fwd mhc.post_bwd}
BASE=/work/wt/mhc28-base/build
mkdir -p $OUT
for p in $(seq 1 $PAIRS); do
  if [ $((p % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for side in $order; do
    B=$([ $side = base ] && echo $BASE || echo $NEW)
    echo "$side pair $p $(uptime)" >> $OUT/load.txt
    flock /work/notes/quiet.lock nice -n -20 env TREX_THREADS=2 $B/kernel_triad_bench --paired 5 $K > $OUT/${side}_$p.txt 2>&1
  done
done
