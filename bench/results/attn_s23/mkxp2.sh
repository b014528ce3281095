#!/bin/bash
# Builds /tmp/attn23/drv from xp2/sparse_attention.cc + xp2/attention_tiles.cc (edited copies with
# variants under XP(n)), linked against the worktree build's other kernel libraries.
set -e
source /work/notes/ccenv.sh
cd /tmp/attn23
W=/work/wt/attn
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -DTREX_ATTN_EXPERIMENT -Wall -Wno-unused-parameter"
nice -n 19 ccache g++ $F -c xp2/sparse_attention.cc -o xp2/sa.o &
nice -n 19 ccache g++ $F -c xp2/attention_tiles.cc -o xp2/at.o
wait
nice -n 19 g++ $F drv.cc xp2/sa.o xp2/at.o $W/build/libtrex_kernels.a $W/build/libtrex_core.a $W/build/libtrex_util.a -ltomlplusplus -lpthread -o drv2
