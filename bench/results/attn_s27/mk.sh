#!/bin/bash
# mk.sh NAME [SA_SRC AT_SRC]: drv_NAME = main 08d4e22's sparse_attention.cc + attention_tiles.cc (impl 0, external
# names renamed *_main) against SA_SRC / AT_SRC (impl 1; default the attn27 worktree's), linked with main's build.
set -e
source /work/notes/ccenv.sh
cd /tmp/attn27
W=/work/wt/attn27
SA=${2:-$W/src/trex/kernels/sparse_attention.cc}; AT=${3:-$W/src/trex/kernels/attention_tiles.cc}
F="$EXTRA -I$W/src -O3 -DNDEBUG -march=native -std=c++20 -Wall -Wno-unused-parameter -Wno-uninitialized -Wno-maybe-uninitialized -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1"
R="-Dsparse_attention_forward=sparse_attention_forward_main -Dsparse_attention_backward=sparse_attention_backward_main -Dsparse_attention_dense_index=sparse_attention_dense_index_main -Dsparse_attention_backward_workspace=sparse_attention_backward_workspace_main -Dattn_detail=attn_detail_main -Dsparse_attention_forward_split=sparse_attention_forward_split_main -DSparseAttnForwardSplit=SparseAttnForwardSplit_main"
[ main/sa.o -nt main/sparse_attention.cc ] || nice -n 5 ccache g++ $F $R -c main/sparse_attention.cc -o main/sa.o &
[ main/at.o -nt main/attention_tiles.cc ] || nice -n 5 ccache g++ $F $R -c main/attention_tiles.cc -o main/at.o &
[ drv.o -nt drv.cc ] || nice -n 5 ccache g++ $F -c drv.cc -o drv.o &
nice -n 5 ccache g++ $F -c $SA -o sa_$1.o &
nice -n 5 ccache g++ $F -c $AT -o at_$1.o
wait
nice -n 5 g++ $F drv.o main/sa.o main/at.o sa_$1.o at_$1.o /work/main/build/libtrex_kernels.a /work/main/build/libtrex_core.a /work/main/build/libtrex_util.a -ltomlplusplus -lpthread -o drv_$1
