#!/bin/bash
# alt2.sh "ARGS" ROUNDS binA binB: alternating (order swapped each round); prints "bin wall cpu"
args=$1; rounds=$2; a=$3; b=$4
for r in $(seq 1 $rounds); do
  if (( r % 2 )); then order="$a $b"; else order="$b $a"; fi
  for x in $order; do echo "$x $(OPENBLAS_NUM_THREADS=1 ./$x $args | awk '{print $5, $10}')"; done
done
