#!/bin/bash
# trex train (v4-micro, in-memory AdamW, one rank, 4 steps; train-micro-adamw.toml), binary A
# against binary B, traced, alternating with the order inside each pair swapped every pair, in the
# quiet lane. Usage: train_ab.sh OUTDIR A_TREX B_TREX [ROUNDS]
o=$1; A=$2; B=$3; R=${4:-3}
cfg=$(cd "$(dirname "$0")" && pwd)/train-micro-adamw.toml
hw=${HW:-/work/notes/s25/idle/hw.toml}
mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
for r in $(seq 1 $R); do
  if [ $((r%2)) = 1 ]; then order="A B"; else order="B A"; fi
  for v in $order; do
    if [ $v = A ]; then b=$A; else b=$B; fi
    rm -rf $o/run_${v}_$r
    l start $v $r
    flock /work/notes/quiet.lock nice -n 0 $b train $cfg --out $o/run_${v}_$r --threads 2 --hw $hw --trace $o/train_${v}_$r.json > $o/train_${v}_$r.log 2>&1
    l done $v $r
    rm -rf $o/run_${v}_$r/checkpoints
  done
done
