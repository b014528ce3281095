#!/bin/bash
# Builds tiles_rate and the dot_tiles A/B drivers (dot_tiles_ab_{blend,unroll,ub,nored}) in
# /tmp/attn24r2 from the worktree's attention_tiles.cc and a copy with dot_tiles_variants.patch.txt.
set -e
source /work/notes/ccenv.sh
W=/work/wt/attn; R=$W/bench/results/attn_s24; D=/tmp/attn24r2
mkdir -p $D && cd $D
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-uninitialized -Wno-maybe-uninitialized"
cp $W/src/trex/kernels/attention_tiles.cc at_v.cc && patch -s at_v.cc < $R/dot_tiles_variants.patch.txt
nice -n 19 g++ $F -c $W/src/trex/kernels/attention_tiles.cc -o at.o
nice -n 19 g++ $F $R/tiles_rate.cc at.o -o tiles_rate
for v in "blend -DVARIANT_BLEND" "unroll -DVARIANT_UNROLL" "ub -DVARIANT_UNROLL -DVARIANT_BLEND" "nored -DVARIANT_NORED"; do
  set -- $v; n=$1; shift
  nice -n 19 g++ $F "$@" -Dattn_detail=attn_detail_b -c at_v.cc -o at_$n.o
  nice -n 19 g++ $F $R/dot_tiles_ab.cc at.o at_$n.o -o dot_tiles_ab_$n
done
