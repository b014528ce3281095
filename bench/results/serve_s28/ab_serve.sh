#!/bin/sh
# ab_serve.sh OLD NEW PAIRS [ARGS]: serve_bench alternately (old new, new old, ...) at nice -20 under the
# quiet lock, TREX_THREADS=2; keeps each run's stderr summary and JSON under /tmp/serve28_ab/.
old=$1; new=$2; pairs=$3; shift 3; args=${*:---clients 1,8 --tokens 256 --repeats 5}
mkdir -p /tmp/serve28_ab; cd /work/wt/serve28
for r in $(seq 1 $pairs); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for tag in $order; do
    if [ $tag = old ]; then b=$old; else b=$new; fi
    flock /work/notes/quiet.lock nice -n -20 env TREX_THREADS=2 $b $args > /tmp/serve28_ab/$r.$tag.json 2> /tmp/serve28_ab/$r.$tag.err
    echo "$r $tag $(grep '^load average' /tmp/serve28_ab/$r.$tag.err) | $(grep '^goals' /tmp/serve28_ab/$r.$tag.err | cut -c1-60) | $(grep -o '"[0-9a-f]\{16\}"' /tmp/serve28_ab/$r.$tag.json | tr -d '"' | tr '\n' ' ')"
  done
done
