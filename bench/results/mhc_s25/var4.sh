#!/bin/bash
# head_fwd requests within the group's rows: distance (lines) x hint (FH 0 = T0, 1 = T1); FD=0 is B's control.
B=${B:-/tmp/mhc25_ab}
for dt in ${DT:-f32 bf16}; do
for th in ${TH:-2 1}; do
for v in ${VS:-0:0 16:0 16:1 12:0 24:0}; do
  fd=${v%:*}; fh=${v#*:}
  echo "FD=$fd FH=$fh $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_FD=$fd MHC_FH=$fh flock /work/notes/quiet.lock nice -n 0 $B head_fwd $dt ${TOK:-4096} $th ${R:-11})"
done; done; done
