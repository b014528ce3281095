#!/bin/bash
# Fresh one-thread tables (thread CPU time, fastest call), 7 passes, for --why (session 19).
# usage: table.sh NAME SPACE[,SPACE...]   (one quiet-lane hold each, under 3 minutes)
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s19/t}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l "start $1 $2"
build/aura_search_bench --threads 1 --passes 7 --min-time 0.03 --timing auto --hw bench/results/aura_s17/hw_s17_idle.toml \
  --save-tables $o/t_$1.tsv --spaces $2 > $o/run_$1.log 2>&1
echo "rc $?" >> $o/run_$1.log
l "end $1"
