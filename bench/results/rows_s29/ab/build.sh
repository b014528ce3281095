#!/bin/sh
# One-process A/B harness of two builds of swiglu.cc (session 29 "rows"): tu_old.cc includes the
# base worktree's swiglu.cc (/work/wt/rows29-base, 75704c6), tu_new.cc the branch's, each under its
# own function names; main.cc checks the bytes of both on random and special inputs, then times
# them alternating. Objects and the binary go to $OUT (default /tmp/rows29_ab).
#   bench/results/rows_s29/ab/build.sh && /tmp/rows29_ab/ab cache|full|special fwd|bwd fp32|bf16 ROUNDS
# (NEWF: extra flags for the new side only; AB_ROWS / AB_COLS: the cache and special shapes.)
set -e
src=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/rows29_ab}
mkdir -p "$OUT"
B=/work/wt/rows29-base/build
F="-O3 -march=native -std=c++20 -DNDEBUG -I/work/wt/rows29/src"
g++ $F -c "$src/tu_old.cc" -o "$OUT/tu_old.o" &
g++ $F $NEWF -c "$src/tu_new.cc" -o "$OUT/tu_new.o" &
g++ $F -c "$src/main.cc" -o "$OUT/main.o"
wait
g++ -o "$OUT/ab" "$OUT/main.o" "$OUT/tu_old.o" "$OUT/tu_new.o" $B/libtrex_kernels.a $B/libtrex_core.a \
  $B/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so /usr/lib/x86_64-linux-gnu/libzstd.so -lpthread
