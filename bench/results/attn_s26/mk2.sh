#!/bin/bash
# mk2.sh NAME SRC BASE_SRC: drv_NAME = BASE_SRC's sparse_attention (impl 0, names renamed) vs SRC (impl 1); attention_tiles main's for both.
set -e
source /work/notes/ccenv.sh
W=/work/wt/attn
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-unused-parameter -Wno-uninitialized -Wno-maybe-uninitialized"
R="-Dsparse_attention_forward=sparse_attention_forward_main -Dsparse_attention_backward=sparse_attention_backward_main -Dsparse_attention_dense_index=sparse_attention_dense_index_main -Dsparse_attention_backward_workspace=sparse_attention_backward_workspace_main -Dattn_detail=attn_detail_main -Dsparse_attention_forward_split=sparse_attention_forward_split_main -DSparseAttnForwardSplit=SparseAttnForwardSplit_main"
A=/tmp/attn26
nice -n 5 ccache g++ $F $R -c $3 -o base_$1.o &
nice -n 5 ccache g++ $F -c $2 -o sa_$1.o
wait
nice -n 5 g++ $F $A/drv.o base_$1.o $A/main/at.o sa_$1.o $A/at.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o drv_$1
