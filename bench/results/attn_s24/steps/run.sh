#!/bin/bash
# Traced v4-micro steps (3 steps after 1 warm-up, 2 threads, seq 2048, MTP), main 82e7be7's
# model_step_bench (msb_main) and the branch's (msb_new) alternating, the order swapped each pair.
o=/tmp/attn24/steps; cd /work/wt/attn
for r in 1 2 3; do
  order="main new"; [ $r = 2 ] && order="new main"
  for v in $order; do
    b=/tmp/attn24/msb_$v
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $v $r" >> $o/timeline.txt
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 $b configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${v}_$r.json > $o/${v}_$r.log 2>&1
    build/trex profile analyze $o/${v}_$r.json --json > $o/${v}_$r.anat.json 2>&1
  done
done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) done" >> $o/timeline.txt
for v in main new; do echo "== $v"; python3 bench/attention_gemm_ratio.py $o/${v}_*.anat.json; done > $o/ratio.txt 2>&1
