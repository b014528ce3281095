#!/bin/bash
# Close the loop: one traced step run each, untuned and tuned (anatomy before/after), one hold.
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/loop}; mkdir -p $o; f=$1
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l "start trace untuned"
TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/trace_untuned.json > $o/trace_untuned.log 2>&1
l "start trace tuned"
TREX_TUNING=$f TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/trace_tuned.json > $o/trace_tuned.log 2>&1
l "end trace"
