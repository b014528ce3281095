#!/bin/bash
# Step A/B again with the final clone SIGSTOPped: 4 pairs, order swapped every pair.
o=/work/notes/s28/end/step2; mkdir -p $o
q() { flock /work/notes/quiet.lock nice -n -20 "$@"; }
step() { ( cd /work/wt/$1 && TREX_THREADS=2 q ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp > $o/$1_$2.log 2>&1 ); echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $1 $2" >> $o/timeline.txt; }
for r in 1 2 3 4; do if (( r % 2 )); then step old $r; step lead $r; else step lead $r; step old $r; fi; done
