#!/bin/bash
# Builds /tmp/rows26_ab: A = main's libraries (mainlib/, 23c9aaf), B = the worktree's row kernels renamed (*_new).
set -e
cd /work/notes/s26/rows
W=${W:-/work/wt/rows}
F="-I$W/src -O3 -DNDEBUG -march=native -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -std=c++20"
R="-Drope_apply=rope_apply_new -Drope_table=rope_table_new -Drope_frequencies=rope_frequencies_new -Dyarn_bounds=yarn_bounds_new
 -Dcross_entropy_forward_backward=cross_entropy_forward_backward_new -Drmsnorm_forward=rmsnorm_forward_new
 -Drmsnorm_backward=rmsnorm_backward_new -Dswiglu_forward=swiglu_forward_new -Dswiglu_backward=swiglu_backward_new"
objs="/tmp/rows26_rope.o /tmp/rows26_cross_entropy.o /tmp/rows26_rmsnorm.o /tmp/rows26_swiglu.o"
for f in ${FILES-rope cross_entropy rmsnorm swiglu}; do
  nice -n 19 g++ $F $R -c $W/src/trex/kernels/$f.cc -o /tmp/rows26_$f.o &

done
nice -n 19 g++ $F -c ab.cc -o /tmp/rows26_ab.o
wait
nice -n 19 g++ -O3 /tmp/rows26_ab.o $objs mainlib/libtrex_kernels.a mainlib/libtrex_core.a mainlib/libtrex_util.a -ltomlplusplus -lpthread -o /tmp/rows26_ab${TAG}
echo built /tmp/rows26_ab${TAG}
