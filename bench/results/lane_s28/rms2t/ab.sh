#!/bin/bash
# 2-thread A/B of the RMSNorm forward's built-in at the model's fp32 shapes (review MEDIUM on a1c976a):
# `trex aura tune rmsnorm.fwd --shape S --budget 1` prints the built-in configuration's time; old =
# /work/wt/old/build (7a0a6fd), new = /work/wt/lead28/build (5184013, with a1c976a); alternating,
# order swapped each round, each call in the nice -20 lane.
d=$(mktemp -d)
for r in $(seq 1 ${ROUNDS:-15}); do
  for S in 2048x512 2048x1024 4096x512 2048x4096; do
    if (( r % 2 )); then order="old lead28"; else order="lead28 old"; fi
    for side in $order; do
      ms=$(cd /work/wt/$side && TREX_THREADS=2 flock /work/notes/quiet.lock nice -n -20 ./build/trex aura tune rmsnorm.fwd --shape $S --budget 1 --skills $d/$side.db --out $d/$side.toml 2>&1 | awk '/^built-in/{print $(NF-1)}')
      echo "$r $S $side $ms"
    done
  done
done
