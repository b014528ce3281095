#!/bin/bash
# kernel_triad_bench --paired from main 82e7be7's build (before: /tmp/kvc24_triad_main, the lead's
# /work/main/build at session 24's start) and this branch at 47ee8f5 (after:
# /tmp/kvc24_triad_branch), alternating, three rounds each, every invocation in the quiet lane.
# Usage: paired.sh OUT ROUNDS KERNEL...
out=$1; rounds=$2; shift 2
for r in 1 2 3; do
  for side in main branch; do
    echo "== $side round $r $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/kvc24_triad_$side --paired $rounds "$@" | grep '^|' | grep -v -- '---' >> $out
  done
done
