#!/bin/bash
# Traced A/B of the v4-micro step: untuned (U) and the s17 tuning file (T), alternating, order
# swapped each round; one trace per run, anatomy per run. usage: trace_ab.sh ROUNDS TAG [FILE]
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/s18/ab}; mkdir -p $o; R=${1:-3}; tag=${2:-t}; f=${3:-bench/results/aura_s17/loop/tuning_s17.toml}
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
one() { # $1 = U|T, $2 = round
  l "start $tag $1 r$2"
  if [ $1 = T ]; then env TREX_TUNING=$f TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp --trace $o/${tag}_$1_r$2.trace.json > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err
  else env TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp --trace $o/${tag}_$1_r$2.trace.json > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err; fi
  l "end $tag $1 r$2"
}
for r in $(seq 1 $R); do
  if [ $((r % 2)) = 1 ]; then one U $r; one T $r; else one T $r; one U $r; fi
done
