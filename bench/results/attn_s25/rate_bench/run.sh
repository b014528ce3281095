#!/bin/bash
# attention_rate_bench --only bwd --rounds 5: main 2325bd6's binary (/work/main/build at session
# start; the attention kernels are the same through bf5a1e5, the commit before this session's) and
# the branch's alternating, order swapped each pair, quiet lane, TREX_THREADS=2.
o=/work/wt/attn/bench/results/attn_s25/rate_bench
for r in 1 2 3 4; do
  order="main new"; [ $((r % 2)) = 0 ] && order="new main"
  for v in $order; do
    b=/tmp/attn25/arb_$v; [ $v = new ] && b=/work/wt/attn/build/attention_rate_bench
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $v $r" >> $o/timeline.txt
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 $b --only ${ONLY:-bwd} --rounds 5 > $o/arb_${ONLY:-bwd}_${v}_$r.log 2>&1
  done
done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) done" >> $o/timeline.txt
