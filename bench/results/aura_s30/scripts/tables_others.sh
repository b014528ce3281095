#!/bin/bash
# Session 30's re-timed other shapes (the skills of the miss spaces' leave-one-out replays), as
# tables_all.sh: the four other v4-micro GEMM classes at two threads (4 passes a hold) and the
# three other cross-entropy shapes at two threads (12 passes a hold), two repeats each.
d="$(dirname "$0")"
q() { "$d/table.sh" "$@"; sleep 20; }
for r in a b; do
  q g4_$r 2 4 gemm:2048x256x512,gemm:512x256x2048,gemm:256x512x2048,gemm:2048x512x512
  q ce3_$r 2 12 cross_entropy:512x8192,cross_entropy:128x32768,cross_entropy:256x16384
done
