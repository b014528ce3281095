#!/bin/bash
# head_bwd stage 1's next-group requests with other hints (MHC_HINT=0 T0, 2 T2, 3 NTA; 1 = main's T1) vs main (A).
B=${B:-/tmp/mhc24_abt}
for th in 2 1; do
for v in "MHC_HINT=0" "MHC_HINT=2" "MHC_HINT=3" "MHC_HINT=1"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B head_bwd bf16 4096 $th 9)"
done; done
