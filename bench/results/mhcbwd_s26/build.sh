#!/bin/bash
# Builds abm_$2: A = /work/main/build's libraries, B = $1's mhc.cc, mhc_projection_backward.cc and
# mhc_sinkhorn.cc (namespace mhc_detail renamed) with every defined
# entry point renamed mhcB_* and its other strong symbols prefixed B_ (objcopy): one process.
set -e
WT=${1:-/work/wt/kvmhc}; D=/work/notes/s26/kvmhc/mhc; OUT=$D/abm_${2:-b}
REN="-Dmhc_backward_runs_by_tokens=mhcB_backward_runs_by_tokens -Dmhc_head_backward=mhcB_head_backward -Dmhc_head_backward_ref=mhcB_head_backward_ref -Dmhc_head_backward_workspace=mhcB_head_backward_workspace -Dmhc_head_forward=mhcB_head_forward -Dmhc_head_forward_ref=mhcB_head_forward_ref -Dmhc_post_backward=mhcB_post_backward -Dmhc_post_backward_ref=mhcB_post_backward_ref -Dmhc_post_forward=mhcB_post_forward -Dmhc_post_forward_ref=mhcB_post_forward_ref -Dmhc_pre_backward=mhcB_pre_backward -Dmhc_pre_backward_ref=mhcB_pre_backward_ref -Dmhc_pre_backward_workspace=mhcB_pre_backward_workspace -Dmhc_pre_forward=mhcB_pre_forward -Dmhc_pre_forward_ref=mhcB_pre_forward_ref"
FL="$XFL -O3 -DNDEBUG -march=native -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -std=c++20"
for f in mhc mhc_projection_backward mhc_sinkhorn; do
  nice -n 5 c++ $FL $REN -Dmhc_detail=mhc_detailB -I$WT/src -c $WT/src/trex/kernels/$f.cc -o $OUT.$f.o &
done
wait
ld -r -o $OUT.b.o $OUT.mhc.o $OUT.mhc_projection_backward.o $OUT.mhc_sinkhorn.o
nm --defined-only -g $OUT.b.o | awk '$2 ~ /^[TDBR]$/ {print $3" B_"$3}' > $OUT.syms
objcopy --redefine-syms=$OUT.syms $OUT.b.o
[ -f $D/abm.main.o ] || nice -n 5 c++ $FL -I/work/main/src -c $D/abm.cc -o $D/abm.main.o
B=/work/main/build
c++ -o $OUT $D/abm.main.o $OUT.b.o $B/libtrex_kernels.a $B/libtrex_core.a $B/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread
