#!/bin/bash
# paired.sh A B ROUNDS ALTS KERNEL...: kernel_triad_bench --paired ROUNDS, binaries A and B alternating ALTS times (quiet lane each)
a=$1 b=$2 r=$3 n=$4; shift 4
for i in $(seq $n); do
  for x in $a $b; do
    echo "== $(basename $x) load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    TREX_THREADS=2 flock /work/notes/quiet.lock nice -n 0 $x --triad 1e10 --peak 1e11 --paired $r "$@" | grep '^| [a-z]'
  done
done
