#!/bin/bash
# Builds /tmp/attn26/drv: main's sparse_attention.cc + attention_tiles.cc (main/) with external names
# renamed *_main, and the worktree's two files, against the worktree build's other kernel libraries.
set -e
source /work/notes/ccenv.sh
cd /tmp/attn26
W=/work/wt/attn
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-unused-parameter -Wno-uninitialized -Wno-maybe-uninitialized"
R="-Dsparse_attention_forward=sparse_attention_forward_main -Dsparse_attention_backward=sparse_attention_backward_main -Dsparse_attention_dense_index=sparse_attention_dense_index_main -Dsparse_attention_backward_workspace=sparse_attention_backward_workspace_main -Dattn_detail=attn_detail_main -Dsparse_attention_forward_split=sparse_attention_forward_split_main -DSparseAttnForwardSplit=SparseAttnForwardSplit_main"
[ main/sa.o -nt main/sparse_attention.cc ] || nice -n 19 ccache g++ $F $R -c main/sparse_attention.cc -o main/sa.o &
[ main/at.o -nt main/attention_tiles.cc ] || nice -n 19 ccache g++ $F $R -c main/attention_tiles.cc -o main/at.o &
nice -n 19 ccache g++ $F -c $W/src/trex/kernels/sparse_attention.cc -o sa.o &
nice -n 19 ccache g++ $F -c $W/src/trex/kernels/attention_tiles.cc -o at.o
wait
nice -n 19 g++ $F drv.cc main/sa.o main/at.o sa.o at.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o drv
