#!/bin/bash
# mkab.sh NAME OLD_SRC_DIR: drv2 with the worktree's kernels (new) vs OLD_SRC_DIR's (as kernels_old)
set -e
n=$1; od=$2; d=/tmp/attn20/ab_$n; mkdir -p $d; cd $d
F="-std=c++20 -O3 -DNDEBUG -march=native"
for f in sparse_attention attention_tiles; do nice -n 19 g++ $F -I/work/wt/attn/src -c /work/wt/attn/src/trex/kernels/$f.cc -o new_$f.o; done
for f in sparse_attention attention_tiles; do nice -n 19 g++ $F -I$od/src -Dkernels=kernels_old -c $od/src/trex/kernels/$f.cc -o old_$f.o; done
sed -e "s#/work/main/src/trex/kernels/sparse_attention.h#$od/src/trex/kernels/sparse_attention.h#" /tmp/attn20/drv/drv2.cc > drv2.cc
nice -n 19 g++ -O2 -march=native -std=c++20 -I/work/wt/attn/src drv2.cc new_*.o old_*.o /tmp/attn20/old/tuning.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o ab
