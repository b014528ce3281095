#!/bin/bash
# head_bwd stage 2 (head_group): dX requested MHC_DXA strips ahead (8 = B control, as landed). A = 3153587.
B=${B:-/tmp/mhc25_abd}
for dt in ${DT:-bf16 f32}; do
for th in ${TH:-1 2}; do
for v in ${VS:-8 32 64}; do
  echo "DXA=$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_DXA=$v flock /work/notes/quiet.lock nice -n 0 $B head_bwd $dt ${TOK:-4096} $th ${R:-11})"
done; done; done
