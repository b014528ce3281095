#!/bin/bash
# futex system calls and context switches of one v4-micro step run, no tuning (U) against a tuning
# file with no entries (E) and session 17's file (T), alternating. usage: futex.sh ROUNDS
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s18/futex}; mkdir -p $o
for r in $(seq 1 ${1:-2}); do
  for a in U E T; do
    env=(); [ $a = E ] && env=(TREX_TUNING=bench/results/aura_s18/ab_processes/empty_tuning.toml); [ $a = T ] && env=(TREX_TUNING=bench/results/aura_s17/loop/tuning_s17.toml)
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $a r$r" >> $o/timeline.txt
    env "${env[@]}" TREX_THREADS=2 perf stat -e 'syscalls:sys_enter_futex,context-switches,cpu-migrations' -x, -o $o/${a}_r$r.stat \
      build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 2 --warmup 1 --mtp > $o/${a}_r$r.json 2>/dev/null
  done
done
