#!/bin/bash
# The swap optimizer in a real `trex train` step (issue 18): v4-micro (80M parameters, one MTP
# block, seq 2048 x 2 micro-batches) trained for STEPS steps with
#   adamw          state in memory (the baseline)
#   swap-buffered  swap file through the page cache, update overlapped with the backward
#   swap-direct    O_DIRECT (the default), overlapped
#   swap-serial    O_DIRECT, one whole swap step after the backward (swap_overlap = false)
# interleaved over ROUNDS rounds so machine load hits every variant alike. Step 1 (tokenizer
# warm-up, first touch) is dropped; the table gives medians over the rest: step time, the
# optimizer phase after the backward (what the update exposes), the swap I/O time and how much
# of it was hidden; and the process's CPU time per step (all threads), steadier than wall time on
# a shared machine. Clipping uses the previous step's norm (clip_with = "previous", for every
# variant), so an overlapped update is never redone; CLIP_WITH=current measures the default.
# Data: the licence texts of /usr/share/doc (no corpus needed). Prints the load with the table.
#   bench/swap_overlap_bench.sh            (from the repository root, after building trex)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREX=${TREX:-$ROOT/build/trex}
OUT=${OUT:-/tmp/trex-swap-overlap-bench}
STEPS=${STEPS:-5}
ROUNDS=${ROUNDS:-2}
CLIP_WITH=${CLIP_WITH:-previous}
VARIANTS=${VARIANTS:-"adamw swap-buffered swap-direct swap-serial"}
rm -rf "$OUT"
mkdir -p "$OUT"

/usr/bin/python3 - "$ROOT" "$OUT" "$CLIP_WITH" <<'PY'
import re, sys
root, out, clip_with = sys.argv[1:4]
base = open(f"{root}/configs/train/v4-micro-cpt.toml").read()
base = base.replace('model = "../model/v4-micro.toml"', f'model = "{root}/configs/model/v4-micro.toml"')
base = base[:base.index("[[data]]")] + '[[data]]\nname = "licenses"\nkind = "text"\npath = "/usr/share/doc/*/copyright"\nweight = 1.0\n'
base = base.replace("sample_bytes = 8000000", "sample_bytes = 2000000")
base = re.sub(r"\[checkpoint\]\n[^\[]*", "[checkpoint]\nevery = 0\nkeep_last = 1\n\n", base)
variants = {
    "adamw": 'kind = "adamw"',
    "swap-buffered": 'kind = "swap"\nswap_direct = false',
    "swap-direct": 'kind = "swap"\nswap_direct = true',
    "swap-serial": 'kind = "swap"\nswap_direct = true\nswap_overlap = false',
}
for name, opt in variants.items():
    text = base.replace('kind = "swap"             # 80M parameters: 960 MB of fp32 state streamed from the run directory', opt)
    text = text.replace("clip_norm = 1.0", f'clip_norm = 1.0\nclip_with = "{clip_with}"')
    open(f"{out}/{name}.toml", "w").write(text)
PY

for r in $(seq 1 "$ROUNDS"); do
  for v in $VARIANTS; do
    echo "round $r: $v ($(uptime | sed 's/.*load/load/'))" >&2
    "$TREX" train --config "$OUT/$v.toml" --out "$OUT/$v-$r" --steps "$STEPS" --threads 2 \
      --hw "$ROOT/configs/hw/a100.toml" > "$OUT/$v-$r.log" 2>&1
  done
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$VARIANTS" <<'PY'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def med(v): return statistics.median(v) if v else 0.0
rows = {}
for v in variants:
    m = []
    for r in range(1, rounds + 1):
        lines = [json.loads(l) for l in open(f"{out}/{v}-{r}/metrics.jsonl")]
        m += [l for l in lines if l["step"] > 1]
    rows[v] = {
        "steps": len(m),
        "step_s": med([l["step_s"] for l in m]),
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
base = rows.get("adamw", {}).get("step_s", 0)
base_cpu = rows.get("adamw", {}).get("cpu_s", 0)
print(f"{'variant':<14} {'steps':>5} {'step s':>7} {'x adamw':>7} {'cpu s':>7} {'x adamw':>7} {'fwd+bwd':>8} {'opt after':>9} "
      f"{'swap I/O':>8} {'hidden':>7} {'exposed':>7} {'hidden%':>7} {'clipped':>7} {'redone':>6} {'opt MB':>7}")
for v, r in rows.items():
    pct = 100 * r["hidden_s"] / r["io_s"] if r["io_s"] > 0 else float("nan")
    ratio = r["step_s"] / base if base else float("nan")
    cratio = r["cpu_s"] / base_cpu if base_cpu else float("nan")
    print(f"{v:<14} {r['steps']:>5} {r['step_s']:>7.3f} {ratio:>7.3f} {r['cpu_s']:>7.2f} {cratio:>7.3f} {r['fwd_bwd_s']:>8.3f} {r['optimizer_s']:>9.3f} "
          f"{r['io_s']:>8.3f} {r['hidden_s']:>7.3f} {r['exposed_s']:>7.3f} {pct:>7.1f} {r['clipped']:>7} {r['redone']:>6} "
          f"{r['opt_mb']:>7.1f}")
PY
echo "load after: $(uptime)"
