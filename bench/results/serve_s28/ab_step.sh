#!/bin/sh
# ab_step.sh OLD NEW ROUNDS THREADS [ROWS]: decode_step_bench alternately (old new new old ...), each
# run at nice -20 under the quiet lock; prints one line per run: tag, per-row-count wall us/step and CPU us/step.
old=$1; new=$2; rounds=$3; thr=$4; rows=${5:-1,8}
cd /work/wt/serve28
for r in $(seq 1 $rounds); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for tag in $order; do
    if [ $tag = old ]; then b=$old; else b=$new; fi
    l=$(cut -d' ' -f1 /proc/loadavg)
    out=$(flock /work/notes/quiet.lock nice -n -20 env TREX_THREADS=$thr $b --rows $rows --repeats 3 --steps 128 2>&1 | grep '^rows' | awk '{printf "%s %s %s ", $2, $3, $(NF-1)}')
    echo "$r $tag load $l : $out"
  done
done
