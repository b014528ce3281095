#!/bin/bash
# End-of-session A/B in the nice -20 lane (lock per item): old = /work/wt/old/build (session start 103e10f),
# new = /work/wt/lead30/build (final main).
o=${OUT:?}; mkdir -p $o
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
q() { flock /work/notes/quiet.lock nice -n -20 "$@"; }
dir() { [ $1 = old ] && echo /work/wt/old || echo /work/wt/lead30; }
step() { local b=$1 r=$2
  ( cd $(dir $b) && TREX_THREADS=2 q ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/${b}_$r.json > $o/${b}_$r.log 2>&1 && ./build/trex profile analyze $o/${b}_$r.json --json > $o/${b}_$r.anat.json 2>&1 ); l $b $r; }
l start
R=/work/wt/lead30/bench/results/oreval_s29/path/run_ab.py
q python3 $R /work/shared/data /work/wt/lead30/build /work/wt/lead30/python /work/wt/old/build /work/wt/old/python 12 > $o/eval_ab.txt 2>&1; l eval_ab
q taskset -c 0 python3 $R /work/shared/data /work/wt/lead30/build /work/wt/lead30/python /work/wt/old/build /work/wt/old/python 12 > $o/eval_ab_one_cpu.txt 2>&1; l eval_ab_one_cpu
(cd /work/wt/lead30 && q python3 bench/oreval_pool_bench.py --paths harness,warm,warm1 --reps 5 --build build /work/shared/data > $o/eval_state.txt 2>&1); l eval_state
(cd /work/wt/lead30 && q taskset -c 0 python3 bench/oreval_pool_bench.py --paths harness,warm,warm1 --reps 5 --build build /work/shared/data > $o/eval_state_one_cpu.txt 2>&1); l eval_state_one_cpu
l done
