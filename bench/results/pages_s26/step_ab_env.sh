#!/bin/bash
# Alternating process A/B of the v4-micro step: arm A plain, arm B with env "$4" (e.g. GLIBC_TUNABLES=glibc.malloc.hugetlb=1), order swapped each pair.
# usage: step_ab_env.sh BUILD PAIRS OUTFILE "VAR=VALUE"
B=$1; P=$2; OUT=$3; ENVB=$4
: > $OUT
for ((i=0;i<P;i++)); do
  if ((i%2==0)); then order="A B"; else order="B A"; fi
  for a in $order; do
    l0=$(cut -d' ' -f1 /proc/loadavg)
    if [ $a = B ]; then e="$ENVB"; else e="TREX_NOTHING=1"; fi
    j=$(env $e TREX_THREADS=2 $B/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp)
    l1=$(cut -d' ' -f1 /proc/loadavg)
    echo "pair $i arm $a load $l0 $l1 $j" >> $OUT
  done
done
