#!/bin/bash
# Session 16 (engineer aura), kept by fixer fix25: the README replay table rows from a replay.sh OUT folder.
# summ.sh DIR: per table: start within 10%, found, returned, (c) guided half / cold half / cold 15%
for f in $1/*.log; do
  k=$(basename $f .log)
  a=$(grep "^start within 10%" $f | sed -E 's/start within 10% of the best: ([0-9]+) of ([0-9]+) spaces; the 15% search found a configuration within 3% on every seed in ([0-9]+) of [0-9]+ spaces, returned one on most seeds in ([0-9]+).*/\1\/\2 found \3 returned \4/')
  c=$(grep "^half budget, over" $f | sed -E 's/.*over the ([0-9]+) of.*guided found within 3% on every seed in ([0-9]+) of [0-9]+ spaces, returned on most seeds in ([0-9]+); cold with the half budget ([0-9]+), ([0-9]+); guided with the 15% budget ([0-9]+), ([0-9]+) \(cold 15%: ([0-9]+), ([0-9]+)\)/(c) n=\1 guided-half \2 cold-half \4 cold15 \8/')
  echo "$k: start $a | $c"
done
