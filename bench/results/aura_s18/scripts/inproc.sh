#!/bin/bash
# Tuned against untuned in one process (model_step_bench --tuning-ab): N pairs, one hold.
# usage: inproc.sh PAIRS TAG [TUNING_FILE]
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s18/inproc}; mkdir -p $o; f=${3:-bench/results/aura_s17/loop/tuning_s17.toml}
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l "start $2 pairs $1 $f"
TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps $1 --warmup 1 --mtp --tuning-ab $f > $o/$2.json 2> $o/$2.err
echo "rc $?" >> $o/$2.err
l "end $2"
