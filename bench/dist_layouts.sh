#!/usr/bin/env bash
# The equality table of docs/dist.md: a tiny V4 model (hash- and score-routed layers, MTP, 4
# routed experts) trained STEPS steps (default 20) in one process and under every (dp, ep, etp)
# layout of 2 and 4 ranks; for each layout, the largest relative loss difference over the
# steps, whether the final weights/routing state and the (logical: ZeRO-1 shards joined)
# optimizer state are byte-identical, and
# for one layout whether a rerun is byte-identical. Where the bytes differ (etp > 1: the MoE
# outputs are sums of shard partials) it prints the largest weight difference, absolute and
# relative to the tensor's largest magnitude.
#   bench/dist_layouts.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-20}
work=$(mktemp -d /tmp/trex-dist-layouts.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > "$work/tiny.toml" <<'TOML'
[model]
name = "v4-tiny-mtp"
vocab = 512
hidden = 64
layers = 2
mtp_depth = 1
norm_eps = 1e-6
train_seq_len = 128
[attention]
kind = "v4"
heads = 2
kv_heads = 1
head_dim = 32
rope_dims = 16
q_lora_rank = 32
window = 16
o_groups = 2
o_lora_rank = 16
compress_ratios = [0, 4]
[indexer]
heads = 2
head_dim = 16
top_k = 8
[mhc]
streams = 2
sinkhorn_iters = 5
[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 64
hash_layers = 1
score_function = "sqrtsoftplus"
bias_update_rate = 0.01
TOML
cat > "$work/train.toml" <<TOML
[run]
model = "tiny.toml"
seed = 5
seq = 64
rows = 1
micro_batches = 4
steps = $steps
log_every = 0
[tokenizer]
sample_bytes = 100000
[optimizer]
lr = 1e-2
min_lr = 1e-3
warmup = 2
weight_decay = 0.01
[checkpoint]
every = 0
keep_last = 1
[[data]]
kind = "text"
path = "/usr/share/common-licenses"
TOML
last=$(printf 'step-%08d' "$steps")
"$build/trex" train --config "$work/train.toml" --out "$work/single" --threads 1 > /dev/null
compare() {  # compare RUN with the single-process run
  /usr/bin/python3 - "$work/single" "$1" "$last" <<'PY'
import json, sys, filecmp, struct
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        a, b = v["data_offsets"]
        out[k] = struct.unpack(f"<{(b - a) // 4}f", raw[8 + n + a:8 + n + b])
    return out
def raw_tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in head.items() if k != "__metadata__"}
def optimizer_state(ckpt):  # the logical optimizer state: one file, or the index's ranges of the shards joined
    try:
        shards = sorted(json.load(open(ckpt + "/optimizer.index.json"))["shards"], key=lambda s: s["offset"])
    except FileNotFoundError:
        shards = [{"file": "optimizer.safetensors", "offset": 0}]
    files = {s["file"]: raw_tensors(ckpt + "/" + s["file"]) for s in shards}
    def piece(s, k):  # elements [at, at + count) of the file (no "at": all of it)
        b = files[s["file"]][k]
        return b[4 * s["at"]:4 * (s["at"] + s["count"])] if "at" in s else b
    return b"".join(b"".join(piece(s, k) for s in shards) for k in ("master", "exp_avg", "exp_avg_sq"))
def weight_diff(p, q):
    ta, tb = tensors(p), tensors(q)
    absd = reld = 0.0
    for k, a in ta.items():
        b = tb[k]
        m = max(abs(x) for x in a) or 1.0
        d = max(abs(x - y) for x, y in zip(a, b))
        absd, reld = max(absd, d), max(reld, d / m)
    return absd, reld
ref, run, last = sys.argv[1:4]
a = [json.loads(l)["loss"] for l in open(ref + "/metrics.jsonl")]
b = [json.loads(l)["loss"] for l in open(run + "/metrics.jsonl")]
rel = max(abs(x - y) / abs(x) for x, y in zip(a, b)) if len(a) == len(b) else float("nan")
w = filecmp.cmp(f"{ref}/checkpoints/{last}/model.safetensors", f"{run}/checkpoints/{last}/model.safetensors", shallow=False)
o = optimizer_state(f"{ref}/checkpoints/{last}") == optimizer_state(f"{run}/checkpoints/{last}")
extra = ""
if not w:
    absd, reld = weight_diff(f"{ref}/checkpoints/{last}/model.safetensors", f"{run}/checkpoints/{last}/model.safetensors")
    extra = f"  (max weight diff {absd:.1e}, {reld:.1e} of the tensor's max)"
print(f"steps {len(b):3d}  max rel loss diff {rel:.1e}  weights+routing identical {w}  optimizer identical {o}{extra}")
PY
}
echo "load: $(uptime | sed 's/.*load average: //')"
for layout in "2 1 1" "1 2 1" "1 1 2" "2 2 1" "1 2 2" "2 1 2" "4 1 1" "1 4 1"; do
  read -r dp ep etp <<< "$layout"
  n=$((dp * ep * etp))
  printf '(dp %d, ep %d, etp %d) on %d ranks: ' "$dp" "$ep" "$etp" "$n"
  if mpirun -n "$n" --oversubscribe --bind-to none "$build/trex" train --config "$work/train.toml" \
      --out "$work/run-$dp$ep$etp" --threads 1 --dp "$dp" --ep "$ep" --etp "$etp" > "$work/log" 2> "$work/err"; then
    compare "$work/run-$dp$ep$etp"
  else
    echo "refused: $(grep -m1 'trex: error' "$work/err")"
  fi
done
printf 'rerun of (dp 2, ep 2, etp 1): '
mpirun -n 4 --oversubscribe --bind-to none "$build/trex" train --config "$work/train.toml" --out "$work/rerun" \
  --threads 1 --dp 2 --ep 2 > /dev/null
/usr/bin/python3 - "$work/run-221" "$work/rerun" "$last" <<'PY'
import json, sys, filecmp
a, b, last = sys.argv[1:4]
la = [json.loads(l)["loss"] for l in open(a + "/metrics.jsonl")]
lb = [json.loads(l)["loss"] for l in open(b + "/metrics.jsonl")]
w = filecmp.cmp(f"{a}/checkpoints/{last}/model.safetensors", f"{b}/checkpoints/{last}/model.safetensors", shallow=False)
print(f"losses identical {la == lb}, weights identical {w}")
PY
echo "load: $(uptime | sed 's/.*load average: //')"
