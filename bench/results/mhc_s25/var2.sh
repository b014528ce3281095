#!/bin/bash
# head_fwd software requests of the next group's X: MHC_FPF 1 = every line (B control), 0 none, 2 every other line, 3 two groups ahead.
B=${B:-/tmp/mhc25_ab}
for dt in ${DT:-bf16 f32}; do
for th in ${TH:-2 1}; do
for v in ${VS:-1 0 2 3}; do
  echo "FPF=$v $dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(MHC_FPF=$v flock /work/notes/quiet.lock nice -n 0 $B head_fwd $dt ${TOK:-4096} $th ${R:-9})"
done; done; done
