#!/bin/sh
# Training tokens/s of trex against the PyTorch implementation on v4-micro (bench/train_vs_torch.py):
# builds what it needs in BUILD, runs both sides with 2 threads, writes bench/results/train_vs_torch.md.
#   bench/run_train_vs_torch.sh BUILD [extra train_vs_torch.py flags]
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BUILD [--steps N] [--seq N] ..." >&2; exit 2; }
build=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
ninja -C "$build" trex model_step_bench
exec /usr/bin/python3 "$root/bench/train_vs_torch.py" --build "$build" "$@"
