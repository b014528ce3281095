#!/bin/bash
# Close the loop, step 2: tune (kernel, class) pairs the v4-micro step looks up and the idle anatomy
# routes to tuning, at 2 threads as the step runs. One quiet-lane hold per call of this script.
# usage: tune.sh GROUP   (GROUP = 1..4)
cd "$(dirname "$0")/../../../.."  # the repository root
o=${OUT:-/tmp/aura/loop}; mkdir -p $o
hw=${HW:-bench/results/aura_s17/hw_s17_idle.toml}
l() { echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $*" >> $o/timeline.txt; }
run() { l "start $*"; build/trex aura tune "$@" --threads 2 --hw $hw --out $o/tuning.toml --skills $o/skills.db --min-gain 0.03 --verify 3 >> $o/tune.log 2>&1; echo "rc $? $*" >> $o/tune.log; l "end $*"; }
case $1 in
1) run gemm --shape 2048x512x8192 --budget 10
   run gemm --shape 8192x512x2048 --budget 10
   run gemm --shape 2048x8192x512 --budget 10 ;;
2) run gemm --shape 2048x512x512 --budget 10
   run gemm --shape 512x512x2048 --budget 10
   run gemm --shape 512x512x8192 --budget 10
   run gemm --shape 8192x512x512 --budget 10
   run gemm --shape 2048x1024x256 --budget 10
   run gemm --shape 2048x256x1024 --budget 10
   run gemm --shape 1024x256x2048 --budget 10 ;;
3) run gemm --shape 2048x256x512 --budget 10
   run gemm --shape 256x512x2048 --budget 10
   run gemm --shape 512x256x2048 --budget 10
   run gemm --shape 2048x512x256 --budget 10 ;;
4) run sparse_attention.bwd --shape 2048x8x128 --budget 8
   run sparse_attention.fwd --shape 2048x8x128 --budget 8
   run mhc.post_bwd --shape 2048x4x512 --budget 8
   run mhc.pre_fwd --shape 2048x4x512 --budget 6
   run mhc.post_fwd --shape 2048x4x512 --budget 6
   run mhc.head_fwd --shape 2048x4x512 --budget 6
   run cross_entropy --shape 2048x8192 --budget 8 ;;
esac
