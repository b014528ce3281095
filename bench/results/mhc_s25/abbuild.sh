#!/bin/bash
# Builds /tmp/mhc25_ab${TAG}: A = ${LIB:-mainlib}/ (main 82e7be7's libraries), B = ${SRC:-/work/wt/mhc}'s mhc*.cc renamed.
set -e
cd /work/notes/s25/mhc
S=${SRC:-/work/wt/mhc}
W=$S/src/trex/kernels
F="${XF} -I$S/src -O3 -DNDEBUG -march=native -std=c++20"
R="-Dmhc_detail=mhc_detail_new -Dmhc_pre_forward=mhc_pre_forward_new -Dmhc_pre_backward=mhc_pre_backward_new \
 -Dmhc_post_forward=mhc_post_forward_new -Dmhc_post_backward=mhc_post_backward_new -Dmhc_head_forward=mhc_head_forward_new \
 -Dmhc_head_backward=mhc_head_backward_new -Dmhc_pre_backward_workspace=mhc_pre_backward_workspace_new \
 -Dmhc_backward_runs_by_tokens=mhc_backward_runs_by_tokens_new -Dmhc_head_backward_workspace=mhc_head_backward_workspace_new"
for f in mhc mhc_projection_backward mhc_sinkhorn; do
  nice -n 19 g++ $F $R -c $W/$f.cc -o /tmp/mhc25${TAG}_$f.o &
done
nice -n 19 g++ $F -c ab.cc -o /tmp/mhc25${TAG}_abmain.o
wait
nice -n 19 g++ -O3 /tmp/mhc25${TAG}_abmain.o /tmp/mhc25${TAG}_mhc.o /tmp/mhc25${TAG}_mhc_projection_backward.o /tmp/mhc25${TAG}_mhc_sinkhorn.o \
  ${LIB:-mainlib}/libtrex_kernels.a ${LIB:-mainlib}/libtrex_core.a ${LIB:-mainlib}/libtrex_util.a -ltomlplusplus -lpthread -o /tmp/mhc25_ab${TAG}
