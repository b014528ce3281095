#!/bin/bash
# Near-idle check of session 27's kv_compress changes: one process, session-start main
# (/work/wt/old/build, 08d4e22, "main") against main's current kv_compressor.cc ("b"), the four
# kernel_triad_bench rows and the model's shapes, 1 and 2 threads, CPU time (and wall with
# AB_WALL=1). "a" is 08d4e22's own kv_compressor.cc, renamed: main against a is a same-code
# control. The ratio-4 backward (its code unchanged this session) runs in both warm-up orders
# (AB_WARM_YX, ab.cc): the copy whose thread-local scratch is allocated first reads ~10% faster.
# About 1.5 minutes near idle. Output: $OUT_DIR/idle_ab.log (default /tmp/kv27_idle).
set -e
HERE=$(cd "$(dirname "$0")" && pwd); OUT_DIR=${OUT_DIR:-/tmp/kv27_idle}; mkdir -p "$OUT_DIR"
git -C /work/main show 08d4e22:src/trex/kernels/kv_compressor.cc > "$OUT_DIR/kv_08d4e22.cc"
A=$OUT_DIR/kv_08d4e22.cc B=/work/main/src/trex/kernels/kv_compressor.cc OUT=$OUT_DIR/ab "$HERE/abbuild.sh"
{
  echo "# $(date -u +%H:%M) $(uptime)"
  for t in 2 1; do
    for row in "fwd 4096 512 4" "fwd 8192 512 128" "bwd 8192 512 128"; do
      "$OUT_DIR/ab" main b $row $t 21 row
    done
    "$OUT_DIR/ab" main b bwd 4096 512 4 $t 21 row-main-warmed-first
    AB_WARM_YX=1 "$OUT_DIR/ab" main b bwd 4096 512 4 $t 21 row-b-warmed-first
    for m in "fwd 2048 128 128" "bwd 2048 128 128"; do "$OUT_DIR/ab" main b $m $t 31 model; done
    "$OUT_DIR/ab" main a bwd 8192 512 128 $t 21 same-code-control
  done
  echo "# $(date -u +%H:%M) $(uptime)"
} 2>&1 | tee "$OUT_DIR/idle_ab.log"
