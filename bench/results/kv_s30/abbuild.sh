#!/bin/bash
# Builds $OUT (default /work/notes/s30/kv/ab): ab.cc against $LIB's libraries (default
# /work/wt/kv30/build: this branch's kv_compress_* as "plain" and "stats"), with variant "base"
# = kv_compressor.cc from $BASE (default the session start 103e10f's, /work/wt/kv30-base) with
# its entry points renamed kvA_*. BASE_STATS=1: $BASE has the statistics' entry points too (a
# snapshot of this branch's src/), renamed and offered as variant "bstats". The project's flags.
set -e
BASE=${BASE:-/work/wt/kv30-base}; LIB=${LIB:-/work/wt/kv30/build}
OUT=${OUT:-/work/notes/s30/kv/ab}; mkdir -p "$(dirname "$OUT")"
HERE=$(cd "$(dirname "$0")" && pwd)
FL="-O3 -DNDEBUG -march=native -Wall -Wextra -Wno-unused-parameter -Wno-restrict -std=c++20"
XAB=""
if [ -n "$BASE_STATS" ]; then XAB="-DAB_BASE_STATS"; fi
REN="-Dkv_compress_forward_keeping_stats=kvA_fstats -Dkv_compress_backward_from_stats=kvA_bstats -Dkv_compress_forward=kvA_forward -Dkv_compress_backward=kvA_backward -Dcompressor_rows=kvA_compressor_rows -Dkv_compress_backward_spill_for_test=kvA_spill -Dkv_compress_forward_ref=kvA_fref -Dkv_compress_backward_ref=kvA_bref"
nice -n 5 c++ $FL $REN -I$BASE/src -c $BASE/src/trex/kernels/kv_compressor.cc -o $OUT.base.o &
nice -n 5 c++ $FL $XAB -I$LIB/../src -c $HERE/ab.cc -o $OUT.main.o
wait %1
c++ -o $OUT $OUT.main.o $OUT.base.o $LIB/libtrex_kernels.a $LIB/libtrex_core.a $LIB/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread
