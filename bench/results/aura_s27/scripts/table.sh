#!/bin/bash
# Session 27's tables on the Zen 4 VM: one thread (thread CPU time, fastest call), P passes (default 5),
# the near-idle probe of session 26's end (same machine) as the model's hardware.
# usage: table.sh NAME SPACE[,SPACE...]   (run under flock /work/notes/quiet.lock; one hold, under 3 minutes)
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s27/t}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l "start $1 $2"
${BENCH:-build/aura_search_bench} --threads 1 --passes ${PASSES:-5} --min-time 0.03 --timing auto \
  --hw bench/results/aura_s27/hw_s26_idle.toml --save-tables $o/t_$1.tsv --spaces $2 > $o/run_$1.log 2>&1
echo "rc $?" >> $o/run_$1.log
l "end $1"
