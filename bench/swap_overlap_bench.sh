#!/bin/bash
# The swap optimizer in a real `trex train` step (issue 18): v4-micro (80M parameters, one MTP
# block, seq 2048 x 2 micro-batches) trained for STEPS steps with
#   adamw          state in memory (the baseline)
#   swap-buffered  swap file through the page cache, update overlapped with the backward
#   swap-direct    O_DIRECT (the default), overlapped
#   swap-serial    O_DIRECT, one whole swap step after the backward (swap_overlap = false)
# A variant may end in :current or :previous to choose its clipping (clip_with) on its own;
# without a suffix it takes CLIP_WITH (default "previous", so an overlapped update is never
# redone). "adamw:current swap-direct:current swap-direct:previous" measures what the default
# clipping costs the overlap (every clipped step is redone after the backward) beside the
# baseline, and prints both loss curves.
# The variants are interleaved over ROUNDS rounds so machine load hits every variant alike. Step 1
# (tokenizer warm-up, first touch) is dropped; the table gives medians over the rest: wall time
# per step (the trainer's step_s, and the whole process's wall time over its steps, start-up
# included), the optimizer phase after the backward (what the update exposes), the swap I/O time
# and how much of it was hidden, the process's CPU time per step (all threads), and the median
# 1-minute load average at the start of that variant's runs (this is a shared machine).
# RANKS > 1 runs every variant under `mpirun -n RANKS` (ZeRO-1: each rank swaps its shard of the
# state, and with the overlap updates it range by range as the ranks' gradients of that range
# are summed during the backward); the metrics and so the table are rank 0's, whose shard (the
# embedding and the first layers) is the last to be final in the backward. THREADS per process
# (default 2 in one process, 1 under mpirun).
# CONCURRENT=1 starts a round's variants at the same time instead of one after another, so each
# step of one runs beside steps of the others under the same machine load (they share the cores:
# the absolute times grow, the ratio between variants is what it measures; a busy shared machine
# swings a sequential ratio by tens of percent as the load moves between runs).
# Data: the licence texts of /usr/share/doc (no corpus needed).
#   bench/swap_overlap_bench.sh            (from the repository root, after building trex)
#   RANKS=2 VARIANTS="adamw swap-direct" bench/swap_overlap_bench.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREX=${TREX:-$ROOT/build/trex}
OUT=${OUT:-/tmp/trex-swap-overlap-bench}
STEPS=${STEPS:-5}
ROUNDS=${ROUNDS:-2}
CLIP_WITH=${CLIP_WITH:-previous}
VARIANTS=${VARIANTS:-"adamw swap-buffered swap-direct swap-serial"}
RANKS=${RANKS:-1}
TRACE=${TRACE:-0}
CONCURRENT=${CONCURRENT:-0}
THREADS=${THREADS:-$(( RANKS >= 2 ? 1 : 2 ))}
LAUNCH=()
if [ "$RANKS" -gt 1 ]; then
  LAUNCH=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -n "$RANKS" --oversubscribe --bind-to none)
fi
rm -rf "$OUT"
mkdir -p "$OUT"

/usr/bin/python3 - "$ROOT" "$OUT" "$CLIP_WITH" "$VARIANTS" <<'PY'
import re, sys
root, out, default_clip, wanted = sys.argv[1:5]
base = open(f"{root}/configs/train/v4-micro-cpt.toml").read()
base = base.replace('model = "../model/v4-micro.toml"', f'model = "{root}/configs/model/v4-micro.toml"')
base = base[:base.index("[[data]]")] + '[[data]]\nname = "licenses"\nkind = "text"\npath = "/usr/share/doc/*/copyright"\nweight = 1.0\n'
base = base.replace("sample_bytes = 8000000", "sample_bytes = 2000000")
base = re.sub(r'\nclip_with = "[a-z]+"', "", base)  # each variant sets its own below
base = re.sub(r"\[checkpoint\]\n[^\[]*", "[checkpoint]\nevery = 0\nkeep_last = 1\n\n", base)
variants = {
    "adamw": 'kind = "adamw"',
    "swap-buffered": 'kind = "swap"\nswap_direct = false',
    "swap-direct": 'kind = "swap"\nswap_direct = true',
    "swap-serial": 'kind = "swap"\nswap_direct = true\nswap_overlap = false',
}
for variant in wanted.split():
    name, _, clip_with = variant.partition(":")
    clip_with = clip_with or default_clip
    if name not in variants or clip_with not in ("current", "previous"):
        sys.exit(f"swap_overlap_bench: unknown variant {variant!r} (one of {', '.join(variants)}, optionally :current or :previous)")
    text = base.replace('kind = "swap"             # 80M parameters: 960 MB of fp32 state streamed from the run directory', variants[name])
    text = text.replace("clip_norm = 1.0", f'clip_norm = 1.0\nclip_with = "{clip_with}"')
    open(f"{out}/{variant}.toml", "w").write(text)
PY

run_variant() {  # round, variant
  local r=$1 v=$2 load t0 t1 trace=()
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r: $v (load $load)" >&2
  if [ "$TRACE" = 1 ]; then trace=(--trace "$OUT/$v-$r.trace.json"); fi
  t0=$(date +%s.%N)
  "${LAUNCH[@]}" "$TREX" train --config "$OUT/$v.toml" --out "$OUT/$v-$r" --steps "$STEPS" --threads "$THREADS" \
    --hw "$ROOT/configs/hw/a100.toml" "${trace[@]}" > "$OUT/$v-$r.log" 2>&1
  t1=$(date +%s.%N)
  echo "$load $t0 $t1" > "$OUT/$v-$r.wall"
}
for r in $(seq 1 "$ROUNDS"); do
  for v in $VARIANTS; do
    if [ "$CONCURRENT" = 1 ]; then run_variant "$r" "$v" & else run_variant "$r" "$v"; fi
  done
  wait
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$VARIANTS" <<'PY'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def med(v): return statistics.median(v) if v else 0.0
rows, losses = {}, {}
for v in variants:
    m, walls, loads = [], [], []
    for r in range(1, rounds + 1):
        lines = [json.loads(l) for l in open(f"{out}/{v}-{r}/metrics.jsonl")]
        m += [l for l in lines if l["step"] > 1]
        load, t0, t1 = map(float, open(f"{out}/{v}-{r}.wall").read().split())
        walls.append((t1 - t0) / max(1, len(lines)))
        loads.append(load)
        losses.setdefault(v, []).append([l["loss"] for l in lines])
    rows[v] = {
        "steps": len(m),
        "step_s": med([l["step_s"] for l in m]),
        "proc_s": med(walls),
        "load": med(loads),
        "cpu_s": med([l.get("cpu_s", 0) for l in m]),
        "fwd_bwd_s": med([l["fwd_bwd_s"] for l in m]),
        "optimizer_s": med([l["optimizer_s"] for l in m]),
        "io_s": med([l.get("swap_io_s", 0) for l in m]),
        "hidden_s": med([l.get("swap_hidden_s", 0) for l in m]),
        "exposed_s": med([l.get("swap_exposed_s", 0) for l in m]),
        "clipped": sum(l["clipped"] for l in m),
        "redone": sum(l.get("swap_redone", False) for l in m),
        "opt_mb": max(l["optimizer_bytes"] for l in m) / 1e6,
    }
baseline = next((v for v in variants if v.split(":")[0] == "adamw"), None)
base = rows[baseline]["step_s"] if baseline else 0
base_cpu = rows[baseline]["cpu_s"] if baseline else 0
print(f"{'variant':<20} {'steps':>5} {'load':>5} {'step s':>7} {'x adamw':>7} {'proc s':>7} {'cpu s':>7} {'x adamw':>7} {'fwd+bwd':>8} {'opt after':>9} "
      f"{'swap I/O':>8} {'hidden':>7} {'exposed':>7} {'hidden%':>7} {'clipped':>7} {'redone':>6} {'opt MB':>7}")
for v, r in rows.items():
    pct = 100 * r["hidden_s"] / r["io_s"] if r["io_s"] > 0 else float("nan")
    ratio = r["step_s"] / base if base else float("nan")
    cratio = r["cpu_s"] / base_cpu if base_cpu else float("nan")
    print(f"{v:<20} {r['steps']:>5} {r['load']:>5.1f} {r['step_s']:>7.3f} {ratio:>7.3f} {r['proc_s']:>7.2f} {r['cpu_s']:>7.2f} {cratio:>7.3f} {r['fwd_bwd_s']:>8.3f} {r['optimizer_s']:>9.3f} "
          f"{r['io_s']:>8.3f} {r['hidden_s']:>7.3f} {r['exposed_s']:>7.3f} {pct:>7.1f} {r['clipped']:>7} {r['redone']:>6} "
          f"{r['opt_mb']:>7.1f}")
print("\nloss per step (round 1; later rounds repeat it bit for bit)")
print(f"{'step':>4} " + " ".join(f"{v:>20}" for v in variants))
for i in range(max(len(losses[v][0]) for v in variants)):
    print(f"{i + 1:>4} " + " ".join(f"{losses[v][0][i]:>20.6f}" if i < len(losses[v][0]) else f"{'':>20}" for v in variants))
PY
echo "load after: $(uptime)"
