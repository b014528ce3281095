#!/bin/bash
# Near-idle figures at session 17's end (lead). old = /work/wt/base/build (046e7fd = b02cfe7's code),
# new = /work/wt/lead/build (main's head). Alternating, medians.
o=/work/notes/s17/idle-end; cd /work/wt/lead
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
./build/trex hw probe --out $o/hw.toml > $o/probe.log 2>&1; l probe
TREX_THREADS=2 ./build/kernel_triad_bench --min-time 0.4 > $o/triad_new.log 2>&1; l triad_new
step() { # $1 old|new $2 round
  local b=/work/wt/lead/build; [ $1 = old ] && b=/work/wt/base/build
  (cd $( [ $1 = old ] && echo /work/wt/base || echo /work/wt/lead ) && TREX_THREADS=2 $b/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_$1_$2.json > $o/step_$1_$2.log 2>&1)
  $b/trex profile analyze $o/step_$1_$2.json --json > $o/step_$1_$2.anat.json 2>&1; l step_$1_$2
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then step old $r; step new $r; else step new $r; step old $r; fi
done
python3 bench/attention_gemm_ratio.py $o/step_old_*.anat.json > $o/attn_ratio_old.log 2>&1
python3 bench/attention_gemm_ratio.py $o/step_new_*.anat.json > $o/attn_ratio_new.log 2>&1
# serve goals (engine)
TREX_THREADS=2 ./build/serve_bench --clients 1,8 --tokens 256 --repeats 5 > $o/serve_bench.log 2>&1; l serve_bench
# serve goals (HTTP)
./build/trex serve --ckpt /work/notes/s16/serve-ab/ckpt --port 18791 --context 1024 > $o/serve.log 2>&1 & sp=$!
python3 bench/serve_http_bench.py http://127.0.0.1:18791 5 --server-pid $sp > $o/serve_http_64.log 2>&1
python3 bench/serve_http_bench.py http://127.0.0.1:18791 3 --tokens 256 --server-pid $sp > $o/serve_http_256.log 2>&1
kill -TERM $sp; wait $sp; l serve_http
# aura: tuned vs untuned step
OUT=$o/aura bash bench/results/aura_s17/scripts/ab.sh bench/results/aura_s17/loop/tuning_s17.toml 3 end > /dev/null 2>&1; l aura_ab
l done
