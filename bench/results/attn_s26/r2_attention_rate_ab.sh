#!/bin/bash
# Alternating attention_rate_bench runs: old (/work/wt/old/build, main 23c9aaf) and new (the attn worktree, main + this session's two commits), order swapped each pair.
for i in 1 2 3 4 5 6; do
  if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for w in $order; do
    b=/work/wt/old/build/attention_rate_bench; [ $w = new ] && b=/work/wt/attn/build/attention_rate_bench
    echo "### pair $i $w $(date -u +%T) load $(cat /proc/loadavg)"
    flock /work/notes/quiet.lock $b --rounds 5 2>&1 | grep -E "^attn|GEMM mix"
  done
done
echo "### end $(date -u +%T) load $(cat /proc/loadavg)"
