#!/bin/bash
# Request distance within the group's rows: head_fwd MHC_FD (lines ahead, T0; 0 = B control: next group's line i, T1),
# head_bwd stage 1 MHC_BD (same for X; dy unchanged).
B=${B:-/tmp/mhc25_ab}
for dt in ${DT:-bf16 f32}; do
for th in ${TH:-1 2}; do
for v in ${FVS:-0 8 16 32}; do
  echo "FD=$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_FD=$v flock /work/notes/quiet.lock nice -n 0 $B head_fwd $dt ${TOK:-4096} $th ${R:-9})"
done
for v in ${BVS:-0 16 32}; do
  echo "BD=$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_BD=$v flock /work/notes/quiet.lock nice -n 0 $B head_bwd $dt ${TOK:-4096} $th ${R:-9})"
done; done; done
