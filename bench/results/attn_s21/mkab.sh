#!/bin/bash
# mkab.sh NAME: drv2 with /work/wt/attn's kernels (new) vs main's (kernels_old), and drv (new only, -g) for perf
set -e; n=$1; d=/tmp/attn21/ab_$n; mkdir -p $d; cd $d
F="-std=c++20 -O3 -DNDEBUG -march=native -g $EXTRA"
for f in sparse_attention attention_tiles; do nice -n 19 g++ $F -I/work/wt/attn/src -c /work/wt/attn/src/trex/kernels/$f.cc -o new_$f.o & done; wait
L="/work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread"
nice -n 19 g++ -O2 -march=native -std=c++20 -I/work/wt/attn/src /tmp/attn21/drv/drv2.cc new_*.o /tmp/attn21/old/old_*.o $L -o ab
nice -n 19 g++ -O2 -march=native -std=c++20 -I/work/wt/attn/src /tmp/attn21/drv/drv.cc new_*.o $L -o drv
