#!/bin/bash
# attention_rate_bench --only fwd --rounds 5, main 82e7be7's binary and the branch's alternating,
# order swapped each pair, 4 pairs, quiet lane.
o=/tmp/attn24/arb; cd /work/wt/attn
for r in 1 2 3 4; do
  order="main new"; [ $((r % 2)) = 0 ] && order="new main"
  for v in $order; do
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $v $r" >> $o/timeline.txt
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 /tmp/attn24/arb_$v --only fwd --rounds 5 > $o/arb_${v}_$r.log 2>&1
  done
done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) done" >> $o/timeline.txt
