#!/bin/bash
# Before (main 82e7be7's kernel_triad_bench, /tmp/mhc24_ktb_main) and after (aa61f2b, /tmp/mhc24_ktb_after)
# alternating, one quiet-lane hold each, TREX_THREADS=2: the kernels session 24 touched.
for r in 1 2 3; do
  for b in main after; do
    echo "== $b round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/mhc24_ktb_$b --paired 5 mhc.post_bwd mhc.head_bwd mhc.head_fwd 2>&1 | grep "^| mhc"
  done
done
