#!/bin/bash
# Traced v4-micro steps (3 steps after 1 warm-up, 2 threads, seq 2048, MTP): main 2325bd6's
# model_step_bench (msb_main, /work/main/build at session start) and the branch's at 922a47a
# (msb_new: also holds the other engineers' commits since 2325bd6) alternating, the order swapped
# each pair; bench/attention_gemm_ratio.py on each trace's analysis (run here with the analyses in the repo folder, moved to /tmp after).
o=/work/wt/attn/bench/results/attn_s25/steps; t=/tmp/attn25/steps; mkdir -p $t; cd /work/wt/attn
for r in 1 2 3; do
  order="main new"; [ $r = 2 ] && order="new main"
  for v in $order; do
    b=/tmp/attn25/msb_$v
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $v $r" >> $o/timeline.txt
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 $b configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $t/${v}_$r.json > $o/${v}_$r.log 2>&1
    build/trex profile analyze $t/${v}_$r.json --json > $t/${v}_$r.anat.json 2>&1
  done
done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) done" >> $o/timeline.txt
for v in main new; do echo "== $v"; python3 bench/attention_gemm_ratio.py $t/${v}_*.anat.json; done > $o/ratio.txt 2>&1
