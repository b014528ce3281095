#!/usr/bin/env bash
# The planner's prediction for RANKS ranks x 1 thread of v4-micro (ep RANKS, ZeRO-1; seq $SEQ,
# default 512, one micro-batch per rank, MTP) beside the measured `trex train` step, on this
# machine:
#   1. `trex hw probe --threads 1` (one rank's device) and `mpirun -n RANKS dist_bench` (the
#      collectives' latency + bytes / bandwidth fit), both now;
#   2. a cluster file of RANKS such devices on one node, linked at the all-to-all fit, run and
#      strategy files for the same step, and `trex plan` on them;
#   3. the same step trained for STEPS steps (default 4) under mpirun: the median of steps 2..
#      of the wall time per step and of rank 0's CPU seconds per step (the time the rank would
#      take with a core of its own: on a loaded machine the wall time also counts waiting for a
#      core, which the planner does not model).
#   bench/dist_plan_compare.sh [BUILD_DIR] [RANKS] [STEPS]
# KERNELS=1 also times the kernels on one thread (`trex kernels bench --json --threads 1`: GEMM,
# sparse attention, memory-bound kernels) and plans a second time with `--calibration` on that
# JSON (measured efficiency factors instead of the defaults).
# KEEP=DIR copies the collectives' fit (dist_bench's TOML), the probe and the planner's inputs there.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
ranks=${2:-2}
steps=${3:-4}
seq=${SEQ:-512}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/trex-dist-plan.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "load before: $(uptime | sed 's/.*load average: //')"
"$build/trex" hw probe --threads 1 --out "$work/hw.toml" > /dev/null 2>&1
mpirun -n "$ranks" --oversubscribe --bind-to none "$build/dist_bench" --out "$work/cal.toml" --max-bytes 16777216 > /dev/null
field() {  # field COLLECTIVE KEY from the calibration
  /usr/bin/python3 -c 'import sys, tomllib
print(tomllib.load(open(sys.argv[1], "rb"))["dist_calibration"][sys.argv[2]][sys.argv[3]])' "$work/cal.toml" "$1" "$2"
}
bw=$(field all_to_all bandwidth_Bps); lat=$(field all_to_all latency_s)
echo "== dist_bench on $ranks ranks: all-to-all latency $lat s, $bw B/s; all-reduce latency $(field all_reduce latency_s) s, $(field all_reduce bandwidth_Bps) B/s"
# A cluster file's device peak is its 16-bit one; trex computes in fp32 (the one-device planner
# takes the fp32 peak for a CPU: docs/plan.md), so the cluster's device is the probe with its
# bf16 peak set to the fp32 one. (The probe's bf16 peak is 1x or 2x the fp32 one depending on
# whether its avx2 or avx512 loop ran fastest, which on this CPU is a coin toss; factors that are
# fractions of the fp32 peak, the defaults and `--calibration`'s alike, then apply as meant.)
/usr/bin/python3 - "$work/hw.toml" "$work/device.toml" <<'PY'
import re, sys, tomllib
text = open(sys.argv[1]).read()
fp32 = tomllib.loads(text)["peak"]["flops_fp32"]
text, n = re.subn(r"(?m)^flops_bf16 = .*$", f"flops_bf16 = {fp32:.6g}  # = flops_fp32: trex computes in fp32", text)
if n != 1:
    sys.exit(f"{sys.argv[1]}: expected one flops_bf16 line, found {n}")
open(sys.argv[2], "w").write(text)
PY
matmul=0.8; attention=0.5
cat > "$work/cluster.toml" <<TOML
[cluster]
name = "this machine, $ranks ranks x 1 thread"
source = "trex hw probe --threads 1 and bench/dist_bench on $ranks ranks, just measured"
device = "$work/device.toml"
nodes = 1
devices_per_node = $ranks
reserved_bytes = 0
[efficiency]
source = "trex defaults for a CPU device (docs/plan.md: 0.8 and 0.5 of the fp32 peak), not measured"
matmul = $matmul
attention = $attention
memory = 1.0
launch_s = 2e-6
comm_launch_s = 0
[[link]]
level = "shared memory (Open MPI)"
group_size = $ranks
bw_unidir_bytes_per_s = $bw
latency_s = $lat
efficiency = 1.0
source = "bench/dist_bench: MPI_Ialltoallv fit"
TOML
cat > "$work/run.toml" <<TOML
[run]
name = "v4-micro-seq$seq-b$ranks"
seq_len = $seq
global_batch = $ranks
micro_batch = 1
train_mtp = true
TOML
cat > "$work/strategy.toml" <<TOML
[strategy]
name = "ep$ranks-zero1"
tp = 1
cp = 1
pp = 1
ep = $ranks
zero = 1
recompute = "none"
TOML
echo "== trex plan (all-to-all fit: latency $lat s, $bw B/s)"
"$build/trex" plan --model "$src/configs/model/v4-micro.toml" --cluster "$work/cluster.toml" --run "$work/run.toml" \
  --strategy "$work/strategy.toml" | grep -E "^(cluster|strategy|factors):|^step time|^  [a-zA-Z].*%"
if [ "${KERNELS:-0}" = 1 ]; then
  "$build/trex" kernels bench --json --threads 1 --hw "$work/hw.toml" --kernel gemm --kernel sparse_attention.fwd \
    --kernel rmsnorm.fwd --kernel swiglu.fwd --kernel cross_entropy --kernel adamw > "$work/kernels.json"
  echo "== trex plan --calibration (trex kernels bench --json --threads 1, just measured)"
  "$build/trex" plan --model "$src/configs/model/v4-micro.toml" --cluster "$work/cluster.toml" --run "$work/run.toml" \
    --strategy "$work/strategy.toml" --calibration "$work/kernels.json" | grep -E "^(factors):|^step time|^  [a-zA-Z].*s +[0-9.]+%"
fi
. "$src/bench/dist_micro_config.sh"
write_micro_config "$work/train.toml" "$src" "$seq" "$ranks" "$steps"
mpirun -n "$ranks" --oversubscribe --bind-to none "$build/trex" train --config "$work/train.toml" --out "$work/run" \
  --threads 1 --ep "$ranks" > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
echo "== measured, $ranks ranks x 1 thread (ep $ranks), steps 2..$steps"
/usr/bin/python3 - "$work/run/metrics.jsonl" <<'PY'
import json, statistics, sys
m = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["step"] >= 2]
print(f"step wall {statistics.median(x['step_s'] for x in m):.3f} s, rank 0 CPU {statistics.median(x['cpu_s'] for x in m):.3f} s "
      f"per step (median), {statistics.median(x['tokens_per_s'] for x in m):.1f} tokens/s")
PY
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work/cal.toml" "$work/hw.toml" "$work/device.toml" "$work/cluster.toml" "$work/run.toml" "$work/strategy.toml" "$KEEP/" && { [ ! -f "$work/kernels.json" ] || cp "$work/kernels.json" "$KEEP/"; }; fi
echo "load after:  $(uptime | sed 's/.*load average: //')"
