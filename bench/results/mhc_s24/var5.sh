#!/bin/bash
# head_bwd bf16 stages pipelined (MHC_PIPE=1: head_back_pipelined) vs main (A); X=1 control (B's two-stage path).
B=${B:-/tmp/mhc24_abt}
for th in 2 1; do
for v in "MHC_PIPE=1" "X=1"; do
  echo "$v thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v $B head_bwd bf16 ${TOK:-4096} $th 9)"
done; done
