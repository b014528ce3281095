#!/bin/bash
# quiet lane: trex serve with the packed prefill to 64 (d1e565c), --stream-interval 4 (default) vs 8,
# one pass = both servers one after the other (order alternating by pass); per server the HTTP
# bench at 64 tokens (R64 rounds) and 256 tokens (R256 rounds), both clients
cd /work/wt/serve
pass=${1:-1}; P=$((19000 + pass * 10))
if [ $((pass % 2)) = 1 ]; then order="iv4 iv8"; else order="iv8 iv4"; fi
for d in $order; do
  P=$((P+1))
  /tmp/serve/s19/after/trex serve --stream-interval ${d#iv} --ckpt /work/notes/s16/serve-ab/ckpt --port $P --context 1024 > /tmp/serve/s19/serve_$P.log 2>&1 & sp=$!
  echo "== $d pass $pass load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
  python3 bench/serve_http_bench.py http://127.0.0.1:$P ${R64:-5} --server-pid $sp
  echo "-- 256 tokens, load $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 bench/serve_http_bench.py http://127.0.0.1:$P ${R256:-3} --tokens 256 --server-pid $sp
  kill -TERM $sp; wait $sp
done
echo "end load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
