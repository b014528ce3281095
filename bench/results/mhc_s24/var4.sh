#!/bin/bash
# head_bwd stage 2 row by row (MHC_KO=1: acc[t] over k, dphi rows one at a time; bf16 strips stored one at a time) vs main (A); X=1 control.
B=${B:-/tmp/mhc24_abt}
for dt in bf16 f32; do for th in 2 1; do
for v in "MHC_KO=1" "X=1"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B head_bwd $dt 4096 $th 9)"
done; done; done
