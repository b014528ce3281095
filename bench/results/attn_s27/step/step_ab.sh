#!/bin/bash
# step_ab.sh: traced v4-micro steps, base (attn27-base, main 08d4e22) and new (attn27) alternating, order swapped per pair.
o=/tmp/attn27/step
step() { local w=$1 tag=$2
  ( cd /work/wt/$w && echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $tag" >> $o/timeline.txt && TREX_THREADS=2 ./build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 3 --warmup 1 --mtp --trace $o/$tag.json > $o/$tag.log 2>&1 && /work/wt/attn27/build/trex profile analyze $o/$tag.json --json > $o/$tag.anat.json 2>&1 ); }
for r in 1 2 3; do if (( r % 2 )); then step attn27-base old_$r; step attn27 new_$r; else step attn27 new_$r; step attn27-base old_$r; fi; done
echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) end" >> $o/timeline.txt
for s in old new; do python3 /work/wt/attn27/bench/attention_gemm_ratio.py $o/${s}_*.anat.json > $o/attn_ratio_$s.log 2>&1; done
