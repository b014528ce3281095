#!/bin/bash
# Session 20: `trex aura tune` on sparse attention at v4-micro's step shapes (2048 tokens, 8 heads,
# head_dim 128), each kind of layer (ratio 0, 4, 128), forward and backward, 1 and 2 threads.
# Quiet lane (one hold per thread count), no skills read or written, built-in and best
# re-measured in turn 5 times each before a gain is written; the model from the session-start
# probe (/work/notes/s20/idle/hw.toml, copied here). Run from the worktree root.
o=bench/results/aura_s20
for th in ${THREADS:-1 2}; do
  flock /work/notes/quiet.lock nice -n 0 bash -c "
    echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) start threads $th\" >> $o/timeline.txt
    for k in fwd bwd; do for r in 0 4 128; do
      ./build/trex aura tune sparse_attention.\$k --shape 2048x8x128x\$r --threads $th --hw $o/hw_s20_idle.toml --no-skills --verify 5 \
        --out $o/tune_${th}t_\${k}_\${r}.toml --json > $o/tune_${th}t_\${k}_\${r}.json 2> $o/tune_${th}t_\${k}_\${r}.err
      echo \"\$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) \$k ratio \$r rc \$?\" >> $o/timeline.txt
    done; done"
done
