#!/bin/bash
# head_bwd prefetch variants (env toggles in the B side), A = main.
B=${B:-/tmp/mhc24_abt}
for th in 1 2; do
for v in "X=1" "MHC_S1PF=0" "MHC_S1PF=2" "MHC_DXPF=0" "MHC_DXPF=16" "MHC_DXPF=4"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B head_bwd ${DT:-bf16} 4096 $th 9)"
done; done
