#!/bin/bash
# kernel_triad_bench --paired from main 2325bd6's build (before: /tmp/kvc25_triad_main, the lead's
# /work/main/build at session 25's start) and a build of this branch (after: /tmp/kvc25_triad_$AFTER,
# AFTER=branch: a598537 rebased on 6dfc972; AFTER=head: 8465964; AFTER=final: e177f74), alternating,
# three rounds each,
# every invocation in the quiet lane.
# Usage: AFTER=branch|head paired.sh OUT ROUNDS KERNEL...
out=$1; rounds=$2; shift 2
for r in 1 2 3; do
  for side in main ${AFTER:-branch}; do
    echo "== $side round $r $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/kvc25_triad_$side --paired $rounds "$@" | grep '^|' | grep -v -- '---' >> $out
  done
done
