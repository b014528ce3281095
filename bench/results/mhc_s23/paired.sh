#!/bin/bash
# Before (main 53913f8's build, /tmp/mhc23_ktb_before) and after (01a96ef, /tmp/mhc23_ktb_after)
# alternating, one quiet-lane hold each, TREX_THREADS=2: the kernels session 23 touched.
for r in 1 2 3; do
  for b in before after; do
    echo "== $b round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/mhc23_ktb_$b --paired 5 mhc.head_bwd mhc.post_fwd 2>&1 | grep "^| mhc"
  done
done
