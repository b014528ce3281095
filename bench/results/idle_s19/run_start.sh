#!/bin/bash
# OUT: where the logs go (the lead used a notes folder outside the repository).
OUT=${OUT:?set OUT to a folder}
# Near-idle figures at session 19 start. old = /work/wt/lead/build (ea826cd, session start),
# new = /work/wt/base/build (main's head). Alternating, medians.
o=$OUT; cd /work/wt/base
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
l start
./build/trex hw probe --out $o/hw.toml > $o/probe.log 2>&1; l probe
TREX_THREADS=2 ./build/kernel_triad_bench --min-time 0.4 > $o/triad_new.log 2>&1; l triad_new
step() { # $1 old|new $2 round
  local b=/work/wt/base/build; [ $1 = old ] && b=/work/wt/lead/build
  (cd $( [ $1 = old ] && echo /work/wt/lead || echo /work/wt/base ) && TREX_THREADS=2 $b/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/step_$1_$2.json > $o/step_$1_$2.log 2>&1)
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
TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 12 --warmup 1 --mtp --tuning-ab bench/results/aura_s17/loop/tuning_s17.toml > $o/tuning_ab_s17.log 2>&1; l tuning_ab_s17
TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 12 --warmup 1 --mtp --tuning-ab bench/results/aura_s18/ab_processes/empty_tuning.toml > $o/tuning_ab_empty.log 2>&1; l tuning_ab_empty
# GEMM against OpenBLAS, 1 and 2 threads (wall), new build
./build/gemm_bench --benchmark_filter='BM_(trex|openblas)_sgemm/' --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 > $o/gemm.log 2>&1; l gemm
# issue 19: the evaluator against the harness pattern (99 ORGEval reference programs)
/usr/bin/python3 bench/oreval_pool_bench.py /work/shared/data --reps 3 --build build --paths harness,warm,warm2,warm1 > $o/oreval_pool.log 2>&1; l oreval_pool
l done
