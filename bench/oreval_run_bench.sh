#!/usr/bin/env bash
# trex eval throughput beside the Python baseline, in one run (see docs/eval.md):
#   1. oreval_bench (Google Benchmark): ORGEval checks with and without parsing, LP and Python
#      completions scored, sandbox start-up; REPS repetitions, medians;
#   2. bench/oreval_wl_baseline.py (networkx WL hash, parse included) on the same LP pairs,
#      REPS repetitions, median, interleaved with the C++ runs.
# Writes bench/results/oreval_bench.md (replaced as a whole); raw outputs in BUILD/bench-oreval/.
#
# Usage: bench/oreval_run_bench.sh [BUILD_DIR]   (default: build)
# Environment: REPS (default 3); TREX_DATA_DIR (default ../shared/data beside the repository).
set -euo pipefail
export LC_ALL=C
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ARG=${1:-build}
if [[ -d $BUILD_ARG ]]; then BUILD=$(cd "$BUILD_ARG" && pwd); else BUILD=$(cd "$REPO/$BUILD_ARG" && pwd); fi
BENCH=$BUILD/oreval_bench
[[ -x $BENCH ]] || { echo "oreval_run_bench: $BENCH is missing (cmake --build $BUILD --target oreval_bench)" >&2; exit 1; }
REPS=${REPS:-3}
export TREX_DATA_DIR=${TREX_DATA_DIR:-$REPO/../shared/data}
OUT=$BUILD/bench-oreval
mkdir -p "$OUT"
"$BENCH" --list_pairs > "$OUT/pairs.tsv"
for r in $(seq 1 "$REPS"); do
  echo "== repetition $r of $REPS" >&2
  "$BENCH" --benchmark_format=json --benchmark_out="$OUT/cpp_$r.json" --benchmark_out_format=json > /dev/null
  /usr/bin/python3 "$REPO/bench/oreval_wl_baseline.py" "$OUT/pairs.tsv" 1 > "$OUT/py_$r.json"
done
/usr/bin/python3 - "$OUT" "$REPS" "$REPO/bench/results/oreval_bench.md" <<'PY'
import json, os, statistics, sys
out, reps, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cpp = [json.load(open(f"{out}/cpp_{r}.json")) for r in range(1, reps + 1)]
py = [json.load(open(f"{out}/py_{r}.json")) for r in range(1, reps + 1)]
def med(name, key):
    vals = []
    for run in cpp:
        for b in run["benchmarks"]:
            if b["name"].startswith(name + "/") or b["name"] == name:
                vals.append(b[key])
    return statistics.median(vals) if vals else float("nan")
def cpu_rate(name):  # items per CPU second of the benchmark thread
    vals = []
    for run in cpp:
        for b in run["benchmarks"]:
            if b["name"].startswith(name + "/"):
                per_iter_items = b["items_per_second"] * b["real_time"] / (1e3 if b["time_unit"] == "ms" else 1)
                vals.append(per_iter_items / (b["cpu_time"] / (1e3 if b["time_unit"] == "ms" else 1)))
    return statistics.median(vals) if vals else float("nan")
eq_wall = med("BM_EquivWithParse", "items_per_second")
eq_cpu = cpu_rate("BM_EquivWithParse")
eq_parsed = med("BM_EquivParsed", "items_per_second")
py_wall = statistics.median(p["checks_per_s"] for p in py)
py_cpu = statistics.median(p["checks_per_cpu_s"] for p in py)
ctx = cpp[0]["context"]
load = os.getloadavg()
lines = [
    "# trex eval throughput", "",
    f"Measured by `bench/oreval_run_bench.sh` ({reps} repetitions, medians; C++ and Python runs interleaved). "
    f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, load average at the end "
    f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (shared with other work: wall-clock figures are noisy, "
    "CPU-time figures less so).", "",
    f"ORGEval equivalence over {py[0]['pairs']} pairs of Bench4Opt reference LPs (both files parsed in every check):", "",
    "| checker | checks/s (wall) | checks/CPU-s | equivalent pairs |", "|---|---:|---:|---:|",
    f"| trex (`lp::structurally_equivalent`, parse included) | {eq_wall:,.0f} | {eq_cpu:,.0f} | {int(cpp[0]['benchmarks'][0].get('equivalent', 0))} |",
    f"| Python: networkx WL hash, parse included | {py_wall:,.0f} | {py_cpu:,.0f} | {py[0]['equivalent']} |",
    f"| **ratio** | **{eq_wall / py_wall:.1f}x** | **{eq_cpu / py_cpu:.1f}x** | |", "",
    f"Without parsing (models in memory) trex checks {eq_parsed:,.0f} pairs/s.", "",
    "Completions scored (one worker, in-process scoring, wall clock):", "",
    "| completions | per second | correct |", "|---|---:|---:|",
    f"| LP text (40 Bench4Opt feasible reference LPs: parse, solve, compare) | {med('BM_ScoreLp', 'items_per_second'):.2f} | {int(med('BM_ScoreLp', 'correct'))}/40 |",
    f"| Python (20 Bench4Opt reference programs, sandboxed interpreter each) | {med('BM_ScorePython', 'items_per_second'):.2f} | {int(med('BM_ScorePython', 'correct'))}/20 |",
    f"| sandboxed interpreter start-up alone (`import gurobipy`) | {med('BM_SandboxStartup', 'items_per_second'):.2f} | |", "",
    "The misses are BENCH4OPT_32 and 33 (one problem, two wordings), whose published optimal value",
    "differs from the model's optimum by 1.2e-3 (see docs/eval.md). LP scoring time is mostly CBC.",
]
open(dest, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
