#!/bin/bash
# Session 29's two-thread tables on the Zen 4 VM: two threads (wall time, the median call: --timing
# auto), P passes (default 3), session 26's near-idle probe (two threads, as the tables) as the
# model's hardware, one hold of the nice -20 lane each (the lane takes both cores, which a
# two-thread table needs).
# usage: table2t.sh NAME SPACE[,SPACE...]   (takes the lane's lock itself; keep a hold under 3 minutes)
# BENCH (default build/aura_search_bench), OUT (default bench/results/aura_s29/tables), PASSES.
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-bench/results/aura_s29/tables}; mkdir -p "$o"
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> "$o/timeline.txt"; }
flock /work/notes/quiet.lock bash -c "
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) start $1 $2\" >> '$o/timeline.txt'
  nice -n -20 ${BENCH:-build/aura_search_bench} --threads 2 --passes ${PASSES:-3} --min-time 0.03 --timing auto \
    --hw bench/results/aura_s27/hw_s26_idle.toml --save-tables '$o/t_$1.tsv' --spaces '$2' > '$o/run_$1.log' 2>&1
  echo \"rc \$?\" >> '$o/run_$1.log'
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) end $1\" >> '$o/timeline.txt'"
