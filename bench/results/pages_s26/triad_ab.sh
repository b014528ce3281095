#!/bin/bash
# kernel_triad_bench, TREX_HUGEPAGES 1/0 alternated as processes (order H S S H ...), --paired 3.
# usage: triad_ab.sh BUILD ORDER OUTPREFIX   (ORDER e.g. "1 0 0 1")
B=$1; ORDER=$2; OUT=$3; n=0
for h in $ORDER; do
  echo "run $n huge $h load $(cut -d' ' -f1 /proc/loadavg)" > $OUT.$n.txt
  TREX_HUGEPAGES=$h TREX_THREADS=2 $B/kernel_triad_bench --triad 30 --peak 230 --paired 3 --min-time 0.3 >> $OUT.$n.txt
  echo "end load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT.$n.txt
  n=$((n+1))
done
