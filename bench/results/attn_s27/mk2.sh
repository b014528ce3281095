#!/bin/bash
# mk2.sh NAME SA AT BSA BAT: drv_NAME = BSA/BAT (impl 0, names renamed *_main) against SA/AT (impl 1). EXTRA, BEXTRA: flags.
set -e
source /work/notes/ccenv.sh
cd /tmp/attn27
W=/work/wt/attn27
F="-I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-unused-parameter -Wno-uninitialized -Wno-maybe-uninitialized -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1"
R="-Dsparse_attention_forward=sparse_attention_forward_main -Dsparse_attention_backward=sparse_attention_backward_main -Dsparse_attention_dense_index=sparse_attention_dense_index_main -Dsparse_attention_backward_workspace=sparse_attention_backward_workspace_main -Dattn_detail=attn_detail_main -Dsparse_attention_forward_split=sparse_attention_forward_split_main -DSparseAttnForwardSplit=SparseAttnForwardSplit_main"
nice -n 5 ccache g++ $BEXTRA $F $R -c $4 -o b_sa_$1.o &
nice -n 5 ccache g++ $BEXTRA $F $R -c $5 -o b_at_$1.o &
nice -n 5 ccache g++ $EXTRA $F -c $2 -o sa_$1.o &
nice -n 5 ccache g++ $EXTRA $F -c $3 -o at_$1.o
wait
nice -n 5 g++ $F drv.o b_sa_$1.o b_at_$1.o sa_$1.o at_$1.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o drv_$1
