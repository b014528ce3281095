#!/bin/bash
# Close the loop, step 3: the v4-micro step untuned against tuned, alternating (order swapped each
# round), one quiet-lane hold. usage: ab.sh TUNING_FILE ROUNDS TAG
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/loop}; mkdir -p $o; f=$1; R=${2:-3}; tag=${3:-ab}
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
one() { # $1 = untuned|tuned, $2 = round
  l "start $tag $1 r$2"
  if [ $1 = tuned ]; then env TREX_TUNING=$f TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err
  else env TREX_THREADS=2 build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps ${STEPS:-3} --warmup 1 --mtp > $o/${tag}_$1_r$2.json 2> $o/${tag}_$1_r$2.err; fi
  l "end $tag $1 r$2"
}
for r in $(seq 1 $R); do
  if [ $((r % 2)) = 1 ]; then one untuned $r; one tuned $r; else one tuned $r; one untuned $r; fi
done
