#!/bin/bash
# Two-level requests. head_fwd MHC_F2=1: also the next group's line i (T1) beside the landed 16-lines-ahead T0.
# head_bwd stage 1 MHC_B2=D: also this group's X line i + D lines (T0) beside the next group's (T1); MHC_B2DY=D: same for dy.
# A = main 2325bd6 (before bf5a1e5): head_fwd lines compare against the pre-session code.
B=${B:-/tmp/mhc25_ab}
for dt in ${DT:-bf16 f32}; do
for th in ${TH:-1 2}; do
for v in ${BVS:-"X=0" "MHC_B2=8" "MHC_B2=16" "MHC_B2=16 MHC_B2DY=8"}; do
  echo "$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(env $v flock /work/notes/quiet.lock nice -n 0 $B head_bwd $dt ${TOK:-4096} $th ${R:-11})"
done; done; done
