#!/bin/bash
# Session 30's re-timed miss spaces: one hold of the nice -20 lane each (<= 3 minutes), session 26's
# near-idle probe as the model's hardware (as sessions 27-29's tables).
# usage: table.sh NAME THREADS PASSES SPACE[,SPACE...]   (takes the lane's lock itself)
# Two threads: wall time, the median call (--timing auto); one thread: the thread's CPU clock, the
# fastest call. BENCH (default build/aura_search_bench), OUT (default bench/results/aura_s30/tables).
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-bench/results/aura_s30/tables}; mkdir -p "$o"
flock /work/notes/quiet.lock bash -c "
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) start $1 t$2 p$3 $4\" >> '$o/timeline.txt'
  nice -n -20 ${BENCH:-build/aura_search_bench} --threads $2 --passes $3 --min-time 0.03 --timing auto \
    --hw bench/results/aura_s27/hw_s26_idle.toml --save-tables '$o/t_$1.tsv' --spaces '$4' > '$o/run_$1.log' 2>&1
  echo \"rc \$?\" >> '$o/run_$1.log'
  echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) end $1\" >> '$o/timeline.txt'"
