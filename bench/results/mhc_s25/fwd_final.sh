#!/bin/bash
# head_fwd: B = the landing change (kHeadAheadLines 16, T0; /tmp/mhc25_ab_fwd16) vs A = main 2325bd6.
B=/tmp/mhc25_ab_fwd16
for dt in f32 bf16; do for th in 2 1; do
  echo "$dt thr $th load $(cut -d' ' -f1 /proc/loadavg): $(flock /work/notes/quiet.lock nice -n 0 $B head_fwd $dt 4096 $th 13)"
done; done
