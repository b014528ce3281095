#!/bin/bash
# The v4-micro step, four arms, untraced, order rotated each round (a 4x4 Latin square):
#   U: no TREX_TUNING;  V: no tuning, but a dummy variable as long as E's in the environment;
#   E: TREX_TUNING = a file with no entries (tuning active, every kernel built-in);
#   T: TREX_TUNING = session 17's tuning file.
# usage: abe4.sh ROUNDS TAG [FIRST_ROUND]
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s18/abe}; mkdir -p $o; R=${1:-2}; tag=${2:-f}; r0=${3:-1}
E_FILE=bench/results/aura_s18/ab_processes/empty_tuning.toml; T_FILE=bench/results/aura_s17/loop/tuning_s17.toml
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
one() { # $1 = arm, $2 = round
  local env=()
  [ $1 = V ] && env=(TREX_TUNINX=$E_FILE)
  [ $1 = E ] && env=(TREX_TUNING=$E_FILE)
  [ $1 = T ] && env=(TREX_TUNING=$T_FILE)
  l "start $tag $1 r$2"
  env "${env[@]}" TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err
  l "end $tag $1 r$2"
}
for r in $(seq $r0 $((r0 + R - 1))); do
  case $((r % 4)) in
    1) for a in U V E T; do one $a $r; done;;
    2) for a in V T U E; do one $a $r; done;;
    3) for a in E U T V; do one $a $r; done;;
    0) for a in T E V U; do one $a $r; done;;
  esac
done
