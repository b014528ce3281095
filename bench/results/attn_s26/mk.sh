#!/bin/bash
# mk.sh NAME SA_SOURCE [AT_SOURCE]: drv_NAME = main (impl 0) vs the given sources (impl 1).
set -e
source /work/notes/ccenv.sh
W=/work/wt/attn
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-unused-parameter -Wno-uninitialized -Wno-maybe-uninitialized"
A=/tmp/attn26
at=${3:-$W/src/trex/kernels/attention_tiles.cc}
nice -n 5 ccache g++ $F -c $2 -o sa_$1.o &
nice -n 5 ccache g++ $F -c $at -o at_$1.o
wait
nice -n 5 g++ $F $A/drv.o $A/main/sa.o $A/main/at.o sa_$1.o at_$1.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o drv_$1
