#!/bin/bash
# Builds /work/notes/s26/kvmhc/ab: A = /work/main/build's libraries, B = $1/src/trex/kernels/kv_compressor.cc
# (default /work/wt/kvmhc) with its entry points renamed. Output: /work/notes/s26/kvmhc/ab_$2 (default ab).
set -e
WT=${1:-/work/wt/kvmhc}; OUT=/work/notes/s26/kvmhc/${2:-ab}
D=/work/notes/s26/kvmhc
FL="$XFL -O3 -DNDEBUG -march=native -Wall -Wextra -Wno-unused-parameter -Wno-restrict -std=c++20"
REN="-Dkv_compress_forward=kvB_forward -Dkv_compress_backward=kvB_backward -Dcompressor_rows=kvB_compressor_rows -Dkv_compress_backward_spill_for_test=kvB_spill -Dkv_compress_forward_ref=kvB_fref -Dkv_compress_backward_ref=kvB_bref"
nice -n 5 c++ $FL $REN -I$WT/src -c $WT/src/trex/kernels/kv_compressor.cc -o $OUT.b.o
nice -n 5 c++ $FL -I/work/main/src -c $D/ab.cc -o $OUT.main.o
B=/work/main/build
c++ -o $OUT $OUT.main.o $OUT.b.o $B/libtrex_kernels.a $B/libtrex_core.a $B/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread
