#!/bin/bash
# head_bwd stage 1 with dy's token pairs formed once per group (head_dy_pairs) vs main (A).
B=${B:-/tmp/mhc24_abt}
for dt in bf16 f32; do for th in 2 1; do
  echo "thr $th load $(cut -d' ' -f1 /proc/loadavg): $($B head_bwd $dt 4096 $th 9)"
done; done
