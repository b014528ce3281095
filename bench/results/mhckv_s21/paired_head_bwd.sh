#!/bin/bash
# Before (da884c8, /tmp/mhckv_ktb_before = main build of 16:39) and after (d6a28e5, /tmp/mhckv_ktb_after) alternating, one quiet-lane hold each.
for r in 1 2 3; do
  for b in before after; do
    echo "== $b round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/mhckv_ktb_$b --paired 7 mhc.head_bwd 2>&1 | grep "^| mhc"
  done
done
