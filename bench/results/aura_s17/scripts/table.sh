#!/bin/bash
# Goal (c) on spaces where 15% is a real budget: the v4-micro step's GEMM classes, one thread
# (thread CPU time: the load disturbs it least), 5 passes. One space per quiet-lane hold.
# usage: table.sh SHAPE
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/c}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l "start $1"
build/aura_search_bench --threads 1 --passes 5 --min-time 0.03 --timing auto --hw ${HW:-bench/results/aura_s17/hw_s17_idle.toml} \
  --save-tables $o/t_$1.tsv --spaces gemm:$1 > $o/run_$1.log 2>&1
echo "rc $?" >> $o/run_$1.log
l "end $1"
