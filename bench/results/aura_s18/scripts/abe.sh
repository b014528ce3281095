#!/bin/bash
# The v4-micro step with no tuning (U), a tuning file with no entries (E: tuning active, every
# kernel built-in) and session 17's tuning file (T), untraced, the order rotated each round.
# usage: abe.sh ROUNDS TAG
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s18/abe}; mkdir -p $o; R=${1:-2}; tag=${2:-e}
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
one() { # $1 = U|E|T, $2 = round
  local env=()
  [ $1 = E ] && env=(TREX_TUNING=bench/results/aura_s18/ab_processes/empty_tuning.toml)
  [ $1 = T ] && env=(TREX_TUNING=bench/results/aura_s17/loop/tuning_s17.toml)
  l "start $tag $1 r$2"
  env "${env[@]}" TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err
  l "end $tag $1 r$2"
}
for r in $(seq 1 $R); do
  case $((r % 3)) in
    1) one U $r; one E $r; one T $r;;
    2) one E $r; one T $r; one U $r;;
    0) one T $r; one U $r; one E $r;;
  esac
done
