#!/bin/bash
# Session 30's re-timed miss spaces (table.sh: one nice -20 lane hold each, 20 s apart so others get
# the lane). Two repeats (a, b) per space, merged by bench/aura_merge_tables.py; the split halves of
# the merged table (the first repeat against the second) are the noise bound.
d="$(dirname "$0")"
q() { "$d/table.sh" "$@"; sleep 20; }
for r in a b; do
  q g512_$r 2 10 gemm:512x512x2048
  q g2048_$r 2 10 gemm:2048x1024x256
  q ce2048_$r 2 14 cross_entropy:2048x8192
  q one_$r 1 8 rmsnorm.fwd:768x4096,cross_entropy:512x8192
done
