#!/bin/bash
# post_bwd one pass (MHC_ONEPASS=1 in the B side) vs main (A); control X=1 = B's split passes.
B=${B:-/tmp/mhc24_abt}
for dt in bf16 f32; do for th in 2 1; do
for v in "MHC_ONEPASS=1" "X=1"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B post_bwd $dt 4096 $th 9)"
done; done; done
