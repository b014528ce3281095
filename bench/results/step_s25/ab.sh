#!/bin/bash
# Traced v4-micro steps, binary A against binary B (main and the branch), alternating, the order
# inside each pair swapped every pair (the second process of a pair ran 5-15% slower near idle
# in session 23). Usage: ab.sh OUTDIR A_BINARY B_BINARY [ROUNDS] [THREADS]
o=$1; A=$2; B=$3; R=${4:-3}; TH=${5:-2}
cfg=$(dirname "$0")/../../../configs/model/v4-micro.toml
mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
for r in $(seq 1 $R); do
  if [ $((r%2)) = 1 ]; then order="A B"; else order="B A"; fi
  for v in $order; do
    if [ $v = A ]; then b=$A; else b=$B; fi
    l start $v $r
    flock /work/notes/quiet.lock nice -n 0 env TREX_THREADS=$TH $b $cfg --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_${v}_$r.json > $o/step_${v}_$r.log 2>&1
    l done $v $r
  done
done
