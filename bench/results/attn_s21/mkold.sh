#!/bin/bash
# old objects: main's kernels as kernels_old
set -e; od=/tmp/attn21/main; d=/tmp/attn21/old; mkdir -p $d; cd $d
F="-std=c++20 -O3 -DNDEBUG -march=native"
for f in sparse_attention attention_tiles tuning; do nice -n 19 g++ $F -I$od/src -Dkernels=kernels_old -c $od/src/trex/kernels/$f.cc -o old_$f.o & done; wait
