#!/bin/bash
# Alternating process A/B of the v4-micro step: TREX_HUGEPAGES=1 (huge) vs 0 (4 KiB), order swapped each pair.
# usage: step_ab.sh BUILD PAIRS OUTFILE
B=$1; P=$2; OUT=$3
: > $OUT
for ((i=0;i<P;i++)); do
  if ((i%2==0)); then order="1 0"; else order="0 1"; fi
  for h in $order; do
    l0=$(cut -d' ' -f1 /proc/loadavg)
    j=$(TREX_HUGEPAGES=$h TREX_THREADS=2 $B/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp)
    l1=$(cut -d' ' -f1 /proc/loadavg)
    echo "pair $i huge $h load $l0 $l1 $j" >> $OUT
  done
done
