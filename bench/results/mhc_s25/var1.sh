#!/bin/bash
# MHC_V bits: 1 = head_bwd next-group requests in stage 2 (not stage 1); 2 = head_fwd phi packed by 8 columns;
# 4 = head_bwd stage 1 phi packed by 8 columns. 0 = control (B without toggles). A = main 2325bd6.
B=${B:-/tmp/mhc25_ab}
for dt in ${DT:-bf16 f32}; do
for th in ${TH:-2 1}; do
for v in ${VS:-0 1 4 5}; do
  echo "V=$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_V=$v flock /work/notes/quiet.lock nice -n 0 $B ${K:-head_bwd} $dt ${TOK:-4096} $th ${R:-9})"
done; done; done
