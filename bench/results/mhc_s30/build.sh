#!/bin/bash
# Builds $OUTDIR/abh_$2 (one process, two versions of the mHC kernels): A = the base build's
# libraries (/work/wt/old/build: main 103e10f, session 30 start; read only), B = worktree $1's
# mhc.cc, mhc_projection_backward.cc and mhc_sinkhorn.cc with every entry point renamed mhcB_*
# and their other strong symbols prefixed B_ (objcopy), namespace mhc_detail renamed.
set -e
WT=${1:?worktree}; HERE=$(cd $(dirname $0) && pwd); D=${OUTDIR:-/work/notes/s30/mhc}; OUT=$D/abh_${2:-b}
BASE=${BASE:-/work/wt/old}
REN=""
for f in mhc_backward_runs_by_tokens mhc_head_backward mhc_head_backward_ref mhc_head_backward_workspace mhc_head_forward mhc_head_forward_ref mhc_post_backward mhc_post_backward_ref mhc_post_forward mhc_post_forward_ref mhc_pre_backward mhc_pre_backward_ref mhc_pre_backward_workspace mhc_pre_forward mhc_pre_forward_ref; do
  REN="$REN -D$f=mhcB_${f#mhc_}"; done
FL="$XFL -O3 -DNDEBUG -march=native -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -std=c++20"
for f in mhc mhc_projection_backward mhc_sinkhorn; do
  nice -n 5 c++ $FL $REN -Dmhc_detail=mhc_detailB -I$WT/src -c $WT/src/trex/kernels/$f.cc -o $OUT.$f.o &
done
wait
ld -r -o $OUT.b.o $OUT.mhc.o $OUT.mhc_projection_backward.o $OUT.mhc_sinkhorn.o
nm --defined-only -g $OUT.b.o | awk '$2 ~ /^[TDBR]$/ {print $3" B_"$3}' > $OUT.syms
objcopy --redefine-syms=$OUT.syms $OUT.b.o
nice -n 5 c++ $FL -I$BASE/src -c $HERE/${ABSRC:-abs.cc} -o $OUT.main.o
B=$BASE/build
c++ -o $OUT $OUT.main.o $OUT.b.o $B/libtrex_kernels.a $B/libtrex_core.a $B/libtrex_util.a /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread
