#!/bin/bash
# head_bwd bf16 8-token groups (MHC_G8=1: stage 2 row by row, strips stored one at a time) vs main (A); X=1 control.
B=${B:-/tmp/mhc24_abt}
for th in 2 1; do
for v in "MHC_G8=1" "X=1"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B head_bwd bf16 4096 $th 9)"
done; done
