#!/bin/bash
# quiet lane: 8- and 16-token prompts only (the same code in every build), limits 16 / 64 alternating
cd /work/wt/serve
for pass in 1 2 3 4 5 6; do
  if [ $((pass % 2)) = 1 ]; then order="16 64"; else order="64 16"; fi
  for v in $order; do
    echo "== limit $v pass $pass load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    env TREX_THREADS=2 /tmp/serve/s19/prefill_bench_$v --prompts 8,16 --clients 8 --repeats 9 --batches 8
  done
done
