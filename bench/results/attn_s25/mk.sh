#!/bin/bash
# Builds outer_ab: A = main's attention_tiles.cc (at_main.cc), B = the worktree's (namespace renamed).
set -e
W=/work/wt/attn; D=/tmp/attn25; cd $D
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-uninitialized -Wno-maybe-uninitialized"
[ at_main.o -nt at_main.cc ] || nice -n 19 g++ $F -c at_main.cc -o at_main.o
nice -n 19 g++ $F -Dattn_detail=attn_detail_b -c ${1:-$W/src/trex/kernels/attention_tiles.cc} -o at_b.o
nice -n 19 g++ $F outer_ab.cc at_main.o at_b.o -o outer_ab
