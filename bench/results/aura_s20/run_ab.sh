#!/bin/bash
# Session 20: the tunes' best sparse attention entries against the built-in, one process per
# thread count, alternating pairs over the three kinds of layer (bench/aura_attention_ab_bench.cc).
# Usage: run_ab.sh THREADS TAG ARGS...  (quiet lane; run from the worktree root)
o=bench/results/aura_s20
th=$1 tag=$2; shift 2
flock /work/notes/quiet.lock nice -n 0 bash -c "
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) ab $tag start\" >> $o/timeline.txt
  ./build/aura_attention_ab_bench --threads $th --pairs ${PAIRS:-9} --min-time 0.2 $* --json > $o/ab_$tag.json 2> $o/ab_$tag.err
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) ab $tag rc \$?\" >> $o/timeline.txt"
