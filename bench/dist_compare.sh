#!/usr/bin/env bash
# v4-micro (seq $SEQ, default 512; MTP on; 2 micro-batches per step; AdamW) trained for a few
# steps as 1 rank x 2 threads and as 2 ranks x 1 thread (ep 2), the two alternating REPEATS
# times (default 3) in one run. For each pair: the median tokens/s of steps 2.. of each and
# their ratio, and the CPU seconds (user + sys, every process of the run) of each; then the
# median ratio over the pairs, with the machine's load before and after. On a loaded machine the
# wall-clock ratio swings with the other jobs; the CPU-time ratio (1 rank's CPU s / 2 ranks' CPU
# s for the same tokens) is the steadier one (it counts MPI's busy waiting as work).
# MESSAGES=1 adds a third run to each pair: 2 ranks with TREX_DIST_SHM=0 (the step's gradient
# pieces and ZeRO-1 weights sent as messages, as across machines, instead of through shared
# memory), and its ratio to the 1-rank run; SPIN=1 one with TREX_DIST_SPIN=1 (ranks wait in
# MPI's own polling loop instead of sleeping between tests: dist/request_wait.h).
#   bench/dist_compare.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build}
steps=${2:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/trex-dist-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$src/bench/dist_micro_config.sh"
write_micro_config "$work/micro.toml" "$src" "${SEQ:-512}" 2 "$steps"
median_tps() {  # median tokens_per_s of steps >= 2 in RUN/metrics.jsonl
  /usr/bin/python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
v = [json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if json.loads(l)["step"] >= 2]
print(f"{statistics.median(v):.1f}")
PY
}
echo "load before: $(uptime | sed 's/.*load average: //')"
cpu_of() {  # CPU seconds (user + sys) of a command and its children
  /usr/bin/python3 -c 'import os, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
t = os.times()
print(f"{t.children_user + t.children_system:.1f}")
sys.exit(r.returncode)' "$@"
}
ratios=(); cpu_ratios=()
extra=(); declare -A extra_ratios=()
[[ "${MESSAGES:-0}" == 1 ]] && extra+=("messages:TREX_DIST_SHM=0")
[[ "${SPIN:-0}" == 1 ]] && extra+=("spin:TREX_DIST_SPIN=1")
for i in $(seq "${REPEATS:-3}"); do
  rm -rf "$work/one" "$work/two"
  c1=$(cpu_of "$build/trex" train --config "$work/micro.toml" --out "$work/one" --threads 2)
  c2=$(cpu_of mpirun -n 2 --oversubscribe --bind-to none "$build/trex" train --config "$work/micro.toml" \
    --out "$work/two" --threads 1 --ep 2)
  one=$(median_tps "$work/one"); two=$(median_tps "$work/two")
  r=$(/usr/bin/python3 -c "print(f'{$two / $one:.3f}')"); rc=$(/usr/bin/python3 -c "print(f'{$c1 / $c2:.3f}')")
  ratios+=("$r"); cpu_ratios+=("$rc")
  echo "pair $i: 1 rank x 2 threads $one tokens/s, $c1 CPU s; 2 ranks x 1 thread (ep 2) $two tokens/s, $c2 CPU s;" \
       "ratio $r (tokens/s), $rc (CPU s); load $(uptime | sed 's/.*load average: //')"
  for v in ${extra[@]+"${extra[@]}"}; do  # NAME:ENV=VALUE
    name=${v%%:*}; env=${v#*:}
    rm -rf "$work/$name"
    c3=$(cpu_of mpirun -n 2 --oversubscribe --bind-to none -x "$env" "$build/trex" train \
      --config "$work/micro.toml" --out "$work/$name" --threads 1 --ep 2)
    tps=$(median_tps "$work/$name"); r3=$(/usr/bin/python3 -c "print(f'{$tps / $one:.3f}')")
    extra_ratios[$name]+="$r3 "
    echo "pair $i: 2 ranks x 1 thread (ep 2, $name: $env) $tps tokens/s, $c3 CPU s; ratio $r3 (tokens/s);" \
         "load $(uptime | sed 's/.*load average: //')"
  done
done
/usr/bin/python3 -c "import statistics, sys; a = sys.argv[1].split(); b = sys.argv[2].split()
print(f'median ratio 2 ranks / 1 rank over {len(a)} pairs: {statistics.median(map(float, a)):.3f} (tokens/s), {statistics.median(map(float, b)):.3f} (CPU s)')" "${ratios[*]}" "${cpu_ratios[*]}"
for name in "${!extra_ratios[@]}"; do
  /usr/bin/python3 -c "import statistics, sys; a = sys.argv[2].split()
print(f'median ratio 2 ranks ({sys.argv[1]}) / 1 rank over {len(a)} pairs: {statistics.median(map(float, a)):.3f} (tokens/s)')" \
    "$name" "${extra_ratios[$name]}"
done
echo "load after:  $(uptime | sed 's/.*load average: //')"
/usr/bin/python3 - "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
print("losses identical:", a == b, a)
PY
