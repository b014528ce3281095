#!/bin/bash
# Builds /tmp/attn23/drv from xp/sparse_attention.cc + xp/attention_tiles.cc (edited copies with
# variants under XP(n)), linked against the worktree build's other kernel libraries.
set -e
source /work/notes/ccenv.sh
cd /tmp/attn23
W=/work/wt/attn
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -DTREX_ATTN_EXPERIMENT -Wall -Wno-unused-parameter"
nice -n 19 ccache g++ $F -c xp/sparse_attention.cc -o xp/sa.o &
nice -n 19 ccache g++ $F -c xp/attention_tiles.cc -o xp/at.o
wait
nice -n 19 g++ $F drv.cc xp/sa.o xp/at.o $W/build/libtrex_kernels.a $W/build/libtrex_core.a $W/build/libtrex_util.a -ltomlplusplus -lpthread -o drv
