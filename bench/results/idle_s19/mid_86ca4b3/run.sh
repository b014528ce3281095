#!/bin/bash
# Mid-session check on main's head (/work/wt/base/build), the poison fixer's nice-19 ctest running beside.
o=/work/notes/s19/mid; cd /work/wt/base
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
./build/trex serve --ckpt /work/notes/s16/serve-ab/ckpt --port 18792 --context 1024 > $o/serve.log 2>&1 & sp=$!
sleep 1
python3 bench/serve_http_bench.py http://127.0.0.1:18792 5 --server-pid $sp > $o/serve_http_64.log 2>&1
python3 bench/serve_http_bench.py http://127.0.0.1:18792 3 --tokens 256 --server-pid $sp > $o/serve_http_256.log 2>&1
kill -TERM $sp; wait $sp; l serve_http
for r in 1 2 3; do
  TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_$r.json > $o/step_$r.log 2>&1
  ./build/trex profile analyze $o/step_$r.json --json > $o/step_$r.anat.json 2>&1; l step_$r
done
python3 bench/attention_gemm_ratio.py $o/step_*.anat.json > $o/attn_ratio.log 2>&1
l done
