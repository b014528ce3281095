#!/bin/bash
# usage: ab.sh OUTDIR ROUNDS_PER_RUN PAIRS BIN_A BIN_B ...  (alternating order per pair)
out=$1; rounds=$2; pairs=$3; shift 3; bins=("$@")
mkdir -p $out
for p in $(seq 1 $pairs); do
  if [ $((p % 2)) = 1 ]; then order=("${bins[@]}"); else order=(); for ((i=${#bins[@]}-1;i>=0;i--)); do order+=("${bins[$i]}"); done; fi
  for b in "${order[@]}"; do
    n=$(basename $b)
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) start $n $p" >> $out/timeline.txt
    flock /work/notes/quiet.lock env TREX_THREADS=2 $b --rounds $rounds $EXTRA > $out/${n}_$p.log 2>&1
    echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) end $n $p" >> $out/timeline.txt
  done
done
