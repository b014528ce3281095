#!/bin/bash
# Builds rms.cc against /work/wt/old (7a0a6fd) and /work/wt/lead28 (main), then alternates them
# ROUNDS times in the nice -20 lane (order swapped each round). Output: one line per shape and run.
H=$(cd $(dirname $0) && pwd)
FL="-O2 -march=native -std=c++20 -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1"
for s in old lead28; do
  B=/work/wt/$s/build
  g++ $FL -I/work/wt/$s/src $H/rms.cc $B/libtrex_kernels.a $B/libtrex_core.a $B/libtrex_util.a \
    /usr/lib/x86_64-linux-gnu/libtomlplusplus.so -lpthread -o /tmp/rms_$s || exit 1
done
for r in $(seq 1 ${ROUNDS:-10}); do
  if (( r % 2 )); then order="old lead28"; else order="lead28 old"; fi
  for s in $order; do flock /work/notes/quiet.lock nice -n -20 /tmp/rms_$s | sed "s/^/$r $s /"; done
done
