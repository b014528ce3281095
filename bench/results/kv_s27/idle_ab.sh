#!/bin/bash
# Near-idle check of session 27's kv_compress changes: one process, session-start main
# (/work/main/build, 08d4e22, "main") against main's current kv_compressor.cc ("b"), the four
# kernel_triad_bench rows and the model's shapes, 1 and 2 threads, CPU time (and wall with
# AB_WALL=1). About 1 minute near idle. Output: $OUT_DIR/idle_ab.log (default /tmp/kv27_idle).
set -e
HERE=$(cd "$(dirname "$0")" && pwd); OUT_DIR=${OUT_DIR:-/tmp/kv27_idle}; mkdir -p "$OUT_DIR"
A=/work/main/src/trex/kernels/kv_compressor.cc B=/work/main/src/trex/kernels/kv_compressor.cc \
  OUT=$OUT_DIR/ab "$HERE/abbuild.sh"
{
  echo "# $(date -u +%H:%M) $(uptime)"
  for t in 2 1; do
    for row in "fwd 4096 512 4" "fwd 8192 512 128" "bwd 4096 512 4" "bwd 8192 512 128"; do
      "$OUT_DIR/ab" main b $row $t 21 row
    done
    for m in "fwd 2048 128 128" "bwd 2048 128 128"; do "$OUT_DIR/ab" main b $m $t 31 model; done
    "$OUT_DIR/ab" main a bwd 4096 512 4 $t 21 same-code-control
  done
  echo "# $(date -u +%H:%M) $(uptime)"
} 2>&1 | tee "$OUT_DIR/idle_ab.log"
