#!/bin/bash
# 3 traced v4-micro steps per binary, alternating main (before 5df9f3d) and this branch
o=/tmp/attn22/steps; cd /work/wt/attn
for r in 1 2 3; do
  for v in main new; do
    b=/tmp/attn22/msb_main; [ $v = new ] && b=build/model_step_bench
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $v $r" >> $o/timeline.txt
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 $b configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${v}_$r.json > $o/${v}_$r.log 2>&1
    /work/main/build/trex profile analyze $o/${v}_$r.json --json > $o/${v}_$r.anat.json 2>&1
  done
done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) done" >> $o/timeline.txt
for v in main new; do echo "== $v"; python3 bench/attention_gemm_ratio.py $o/${v}_*.anat.json; done > $o/ratio.txt 2>&1
