#!/bin/bash
# Before (main 1dd788b's build = 5d4eb86's mhc code, /tmp/mhc_ktb_before) and after (dd3a218, /tmp/mhc_ktb_after)
# alternating, one quiet-lane hold each, TREX_THREADS=2.
for r in 1 2 3; do
  for b in before after; do
    echo "== $b round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/mhc_ktb_$b --paired 5 mhc.head_fwd 2>&1 | grep "^| mhc"
  done
done
