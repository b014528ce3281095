#!/bin/sh
# The rmsnorm.cc counterpart of build.sh (rms_tu_old.cc: the base worktree's rmsnorm.cc, rms_tu_new.cc:
# the branch's; rms_main.cc: bytes then alternating timing, AB_W=1 weighted with dw, AB_TINYROW=1
# a row of tiny dy for denormal dx, AB_ROWS / AB_COLS the shape). Output in $OUT (default /tmp/rows29_abr).
#   bench/results/rows_s29/ab/rms_build.sh && /tmp/rows29_abr/ab cache|full fwd|bwd fp32|bf16 ROUNDS
set -e
src=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/rows29_abr}
mkdir -p "$OUT"
B=/work/wt/rows29-base/build
F="-O3 -march=native -std=c++20 -DNDEBUG -I/work/wt/rows29/src"
g++ $F -c "$src/rms_tu_old.cc" -o "$OUT/tu_old.o" &
g++ $F $NEWF -c "$src/rms_tu_new.cc" -o "$OUT/tu_new.o" &
g++ $F -c "$src/rms_main.cc" -o "$OUT/main.o"
wait
g++ -o "$OUT/ab" "$OUT/main.o" "$OUT/tu_old.o" "$OUT/tu_new.o" $B/libtrex_kernels.a $B/libtrex_core.a \
  $B/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so /usr/lib/x86_64-linux-gnu/libzstd.so -lpthread
