#!/bin/bash
# kernel_triad_bench --paired from main 53913f8's build (before: /tmp/kvc23_triad_main) and this
# branch's (after: /tmp/kvc23_triad_branch), alternating, three rounds each, every invocation in
# the quiet lane. Usage: paired.sh OUT ROUNDS KERNEL...
out=$1; rounds=$2; shift 2
for r in 1 2 3; do
  for side in main branch; do
    echo "== $side round $r $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/kvc23_triad_$side --paired $rounds "$@" | grep '^|' | grep -v -- '---' >> $out
  done
done
