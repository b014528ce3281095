#!/bin/bash
# Before (main 2325bd6's kernel_triad_bench, /tmp/mhc25_ktb_main) and after (3153587, /tmp/mhc25_ktb_after)
# alternating, one quiet-lane hold each, TREX_THREADS=2: the kernels session 25 touched (ROUNDS rounds each; earlier runs: after = 009971a).
for r in $(seq 1 ${ROUNDS:-3}); do
  for b in main after; do
    echo "== $b round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/mhc25_ktb_$b --paired 5 mhc.head_fwd mhc.head_bwd 2>&1 | grep -E "^\| mhc|^probe"
  done
done
