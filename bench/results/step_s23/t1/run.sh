#!/bin/bash
o=bench/results/step_s23/t1
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
for r in 1 2 3; do
  if [ $((r%2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = old ]; then b=/work/main/build; else b=/work/wt/step/build; fi
    l start $v $r
    flock /work/notes/quiet.lock nice -n 0 env TREX_THREADS=2 $b/model_step_bench /work/wt/step/configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_${v}_$r.json > $o/step_${v}_$r.log 2>&1
    l done $v $r
    /work/wt/step/build/trex profile analyze $o/step_${v}_$r.json --json > $o/step_${v}_$r.anat.json 2>&1
  done
done
