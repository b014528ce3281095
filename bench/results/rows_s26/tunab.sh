#!/bin/bash
# tunab.sh ALTS CFG... : ktb.main --paired 3 over the five rows, one run per tuning config (default = none), configs alternating ALTS times
alts=$1; shift
for i in $(seq $alts); do
  for c in "$@"; do
    echo "== $c load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    if [ $c = default ]; then unset TREX_TUNING; else export TREX_TUNING=/work/notes/s26/rows/tun/$c.toml; fi
    TREX_THREADS=2 ./ktb.main --triad 1e10 --peak 1e11 --paired 3 ${KS:-rmsnorm.fwd swiglu.fwd swiglu.bwd rope.fwd cross_entropy} | grep '^| [a-z]' | awk -F'|' '{printf "%s %s %s %s\n",$2,$3,$5,$7}'
  done
done
