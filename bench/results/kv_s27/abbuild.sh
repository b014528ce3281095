#!/bin/bash
# Builds $OUT (default /work/notes/s27/kv27/ab): ab.cc against $LIB's libraries ("main"; default
# /work/wt/old/build, the lead's build of session 27's start 08d4e22; /work/main/build, used until
# 16:20, held session 26's start 23c9aaf),
# with variant "a" = kv_compressor.cc from $A and "b" = from $B (files), each with its entry points
# renamed. XFLA / XFLB: extra flags (-D...) for a variant.
set -e
A=${A:?A=path of variant a\'s kv_compressor.cc}; B=${B:?B=path of variant b\'s kv_compressor.cc}
OUT=${OUT:-/work/notes/s27/kv27/ab}; mkdir -p "$(dirname "$OUT")"
HERE=$(cd "$(dirname "$0")" && pwd); SRC=/work/main/src; LIB=${LIB:-/work/wt/old/build}
FL="-O3 -DNDEBUG -march=native -Wall -Wextra -Wno-unused-parameter -Wno-restrict -std=c++20"
ren() { echo "-Dkv_compress_forward=kv$1_forward -Dkv_compress_backward=kv$1_backward -Dcompressor_rows=kv$1_compressor_rows -Dkv_compress_backward_spill_for_test=kv$1_spill -Dkv_compress_forward_ref=kv$1_fref -Dkv_compress_backward_ref=kv$1_bref"; }
nice -n 5 c++ $FL $XFLA $(ren A) -I$SRC -iquote "$(dirname "$A")" -c "$A" -o $OUT.a.o &
nice -n 5 c++ $FL $XFLB $(ren B) -I$SRC -iquote "$(dirname "$B")" -c "$B" -o $OUT.b.o &
nice -n 5 c++ $FL -I$SRC -c $HERE/ab.cc -o $OUT.main.o
wait %1 && wait %2
c++ -o $OUT $OUT.main.o $OUT.a.o $OUT.b.o $LIB/libtrex_kernels.a $LIB/libtrex_core.a $LIB/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread
