#!/bin/bash
# quiet lane: prefill CPU per prompt, packed-prefill limit 16 (main) / 32 / 64, one pass = the three
# binaries one after the other (order rotated by pass); run under flock, one pass per call
cd /work/wt/serve
pass=${1:-1}
case $((pass % 3)) in 1) order="16 32 64";; 2) order="32 64 16";; 0) order="64 16 32";; esac
for v in $order; do
  echo "== limit $v pass $pass load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
  env TREX_THREADS=2 /tmp/serve/s19/prefill_bench_$v --repeats ${R:-5} --batches ${B:-6}
done
