#!/usr/bin/env bash
# v4-micro (seq $SEQ, default 512; MTP on; 2 micro-batches per step; AdamW) trained for a few
# steps as 1 rank x 2 threads and as 2 ranks x 1 thread (ep 2), side by side in one run; prints
# the median tokens/s of steps 2.. of each and the ratio, with the machine's load.
#   bench/dist_compare.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build}
steps=${2:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/trex-dist-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > "$work/micro.toml" <<TOML
[run]
model = "$src/configs/model/v4-micro.toml"
seed = 1
seq = ${SEQ:-512}
rows = 1
micro_batches = 2
steps = $steps
mtp = true
log_every = 1
[tokenizer]
sample_bytes = 1000000
[optimizer]
kind = "adamw"
lr = 2e-3
warmup = 1
[checkpoint]
every = 0
keep_last = 1
[[data]]
kind = "text"
path = "/usr/share/common-licenses"
TOML
median_tps() {  # median tokens_per_s of steps >= 2 in RUN/metrics.jsonl
  /usr/bin/python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
v = [json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if json.loads(l)["step"] >= 2]
print(f"{statistics.median(v):.1f}")
PY
}
echo "load before: $(uptime | sed 's/.*load average: //')"
"$build/trex" train --config "$work/micro.toml" --out "$work/one" --threads 2 > "$work/one.log"
mpirun -n 2 --oversubscribe --bind-to none "$build/trex" train --config "$work/micro.toml" --out "$work/two" \
  --threads 1 --ep 2 > "$work/two.log"
one=$(median_tps "$work/one"); two=$(median_tps "$work/two")
echo "load after:  $(uptime | sed 's/.*load average: //')"
echo "1 rank x 2 threads:         $one tokens/s (median of steps 2..$steps)"
echo "2 ranks x 1 thread (ep 2):  $two tokens/s"
/usr/bin/python3 -c "print(f'ratio 2 ranks / 1 rank: {$two / $one:.3f}')"
/usr/bin/python3 - "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
print("losses identical:", a == b, a)
PY
