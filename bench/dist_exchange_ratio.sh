#!/usr/bin/env bash
# The MoE all-to-all inside a v4-micro training step against a bare MPI_Ialltoallv of the same
# sizes, and the share of the dispatch hidden behind the shared expert (docs/dist.md "The
# all-to-all inside a step"), over RUNS runs:
#   1. `mpirun -n 2 dist_bench` once: the all-to-all / all-reduce / all-gather fits, now (MPI
#      requests completed by trex's sleeping waits, dist/request_wait.h, as in the step), and
#      once more with TREX_DIST_SPIN=1 (Open MPI's own polling MPI_Wait: the bare collective);
#   2. RUNS times: v4-micro, 2 ranks x 1 thread, ep 2, seq $SEQ (default 512), 2 micro-batches,
#      MTP, STEPS steps (default 4) with --trace, then bench/dist_exchange_trace.py on the
#      ranks' traces against that fit (steps 2..);
#   3. the median over the runs of the in-step / raw ratio and of the hidden share, against
#      each fit.
#   bench/dist_exchange_ratio.sh [BUILD_DIR] [RUNS] [STEPS]
# KEEP=DIR copies the calibration and each run's analysis there (not the traces).
# Meant for the quiet lane: `flock /work/notes/quiet.lock bench/dist_exchange_ratio.sh build 3`.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
steps=${3:-4}
seq=${SEQ:-512}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/trex-dist-a2a.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
load() { uptime | sed 's/.*load average: //'; }
echo "load before: $(load) ($(date -u +%H:%M:%S) UTC)"
mpirun -n 2 --oversubscribe --bind-to none "$build/dist_bench" --out "$work/cal.toml" > "$work/bench.txt"
tail -4 "$work/bench.txt"   # the three fits and the load
TREX_DIST_SPIN=1 mpirun -n 2 --oversubscribe --bind-to none -x TREX_DIST_SPIN "$build/dist_bench" --out "$work/cal_spin.toml" > "$work/bench_spin.txt"
echo "TREX_DIST_SPIN=1:"; tail -4 "$work/bench_spin.txt"
. "$src/bench/dist_micro_config.sh"
write_micro_config "$work/micro.toml" "$src" "$seq" 2 "$steps"
for i in $(seq 1 "$runs"); do
  out="$work/run$i"
  mpirun -n 2 --oversubscribe --bind-to none "$build/trex" train --config "$work/micro.toml" --out "$out" \
    --threads 1 --ep 2 --trace "$out/trace.json" > "$work/train$i.log" 2>&1 || { tail -20 "$work/train$i.log"; exit 1; }
  echo "-- run $i, load $(load) ($(date -u +%H:%M:%S) UTC)"
  /usr/bin/python3 "$src/bench/dist_exchange_trace.py" "$work/cal.toml" "$out/trace.rank0.json" "$out/trace.rank1.json" \
    | tee "$work/analysis$i.txt"
  echo "against the TREX_DIST_SPIN=1 fit:"
  /usr/bin/python3 "$src/bench/dist_exchange_trace.py" "$work/cal_spin.toml" "$out/trace.rank0.json" "$out/trace.rank1.json" \
    | tee "$work/analysis_spin$i.txt"
done
/usr/bin/python3 - "$work" "$runs" <<'PY'
import re, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
for tag, name in (("", "fit with trex's sleeping waits"), ("_spin", "fit with TREX_DIST_SPIN=1")):
    ratio, hidden = [], []
    for i in range(1, runs + 1):
        t = open(f"{work}/analysis{tag}{i}.txt").read()
        ratio.append(float(re.search(r"in-step = ([0-9.]+) of raw", t).group(1)))
        hidden.append(float(re.search(r"hidden share ([-0-9.]+)", t).group(1)))
    print(f"== {runs} runs, {name}: in-step / raw {', '.join(f'{x:.3f}' for x in ratio)} "
          f"(median {statistics.median(ratio):.3f}); hidden share {', '.join(f'{x:.3f}' for x in hidden)} "
          f"(median {statistics.median(hidden):.3f})")
PY
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$work"/cal*.toml "$work"/bench*.txt "$work"/analysis*.txt "$KEEP/"
fi
echo "load after:  $(load) ($(date -u +%H:%M:%S) UTC)"
