#!/bin/bash
# Session 29's two-thread tables, one lane hold each (table2t.sh), 20 s apart so others get the lane.
# The six v4-micro GEMM classes in two repeats (a, b: 3 passes each, two spaces a hold, ~80 s),
# merged by bench/aura_merge_tables.py (gemm6_2t_s29.tsv); the row kernels' eight one-thread shapes of sessions 27-28
# plus the model's RMSNorm 2048x512 (7 passes, one hold); four cross-entropy shapes (7 passes).
d="$(dirname "$0")"
q() { "$d/table2t.sh" "$@"; sleep 20; }
G1=gemm:512x512x2048,gemm:2048x1024x256
G2=gemm:2048x256x512,gemm:512x256x2048
G3=gemm:256x512x2048
PASSES=3 q g_2048x512x512_a gemm:2048x512x512   # the first hold, a trial of the hold's length (41 s)
for r in a b; do
  PASSES=3 q g1_$r $G1; PASSES=3 q g2_$r $G2
  if [ $r = a ]; then PASSES=3 q g3_$r $G3; else PASSES=3 q g3_$r $G3,gemm:2048x512x512; fi
done
PASSES=7 q rows9 swiglu.fwd:1024x4096,swiglu.fwd:2048x2048,swiglu.fwd:4096x1024,swiglu.fwd:512x4096,rmsnorm.fwd:1024x4096,rmsnorm.fwd:4096x1024,rmsnorm.fwd:2048x2048,rmsnorm.fwd:512x4096,rmsnorm.fwd:2048x512
PASSES=7 q rows9_b swiglu.fwd:1024x4096,swiglu.fwd:2048x2048,swiglu.fwd:4096x1024,swiglu.fwd:512x4096,rmsnorm.fwd:1024x4096,rmsnorm.fwd:4096x1024,rmsnorm.fwd:2048x2048,rmsnorm.fwd:512x4096,rmsnorm.fwd:2048x512  # a repeat, after ce4
PASSES=7 q ce4 cross_entropy:2048x8192,cross_entropy:512x8192,cross_entropy:128x32768,cross_entropy:256x16384
# Merged as README.md says: cat t_g1_a t_g2_a t_g3_a t_g_2048x512x512_a > A; cat t_g1_b t_g2_b t_g3_b > B;
# aura_merge_tables.py A B gemm6_2t_s29.tsv; aura_merge_tables.py t_rows9.tsv t_rows9_b.tsv rows9_2t_s29.tsv.
# t_ce4.tsv is kept as ce4_2t_s29.tsv
