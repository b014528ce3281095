#!/bin/bash
# replay.sh BIN OUTDIR KEY...: the deterministic replays behind README.md (session 16): for each
# KEY, `BIN --loo --pass-level --hw H --tables T` (niced, TMPDIR=/dev/shm) into OUTDIR/KEY.log.
# Run from the repository root. KEYs: s16 s16b s16ab s15 s14 s13 s11i s11c s10a s10b s8 s7 s5
# (two-thread tables) and 1s11c 1s10a 1s10b 1s8 1s7 1s5 (one-thread tables without their GEMM
# spaces, an older grid that --loo refuses; written to OUTDIR/tables). s16ab is the two s16
# repeats merged (bench/aura_merge_tables.py). Bad input (no BIN, an unknown KEY): one line, exit 2.
set -u
if [ $# -lt 3 ] || [ ! -x "$1" ]; then
  echo "replay.sh: usage: replay.sh BIN OUTDIR KEY... (BIN an executable aura_search_bench)" >&2; exit 2
fi
BIN=$1; OUT=$2; shift 2
R=bench/results; S=$R/aura_s16
H32=$R/profile_v4_micro_machine2_l3_32m.toml; H8=$R/profile_v4_micro_machine2_l3_8m.toml
declare -A HW=( [s16]="$S/aura_search_s16_2t_loaded.tsv $S/hw_s16.toml"
  [s16b]="$S/aura_search_s16b_2t_loaded.tsv $S/hw_s16.toml" [s16ab]="$OUT/tables/s16ab.tsv $S/hw_s16.toml"
  [s15]="$R/aura_s15/aura_search_s15_2t_loaded.tsv $R/aura_s15/hw_s15.toml"
  [s14]="$R/idle_s14/aura_search_s14_2t_idle.tsv $H32" [s13]="$R/idle_s13/aura_search_s13_2t_idle.tsv $H32"
  [s11i]="$R/aura_search_s11_2t_idle.tsv $H32" [s11c]="$R/aura_search_s11_2t_c.tsv $H32"
  [s10a]="$R/aura_search_s10_2t_a.tsv $H32" [s10b]="$R/aura_search_s10_2t_b.tsv $H32"
  [s8]="$R/aura_search_s8_2t_min.tsv $H32" [s7]="$R/aura_search_s7_2t.tsv $H32" [s5]="$R/aura_search_s5_2t.tsv $H8"
  [1s11c]="$OUT/tables/aura_search_s11_1t_c.tsv $H32" [1s10a]="$OUT/tables/aura_search_s10_1t_a.tsv $H32"
  [1s10b]="$OUT/tables/aura_search_s10_1t_b.tsv $H32" [1s8]="$OUT/tables/aura_search_s8_1t_min.tsv $H32"
  [1s7]="$OUT/tables/aura_search_s7_1t.tsv $H32" [1s5]="$OUT/tables/aura_search_s5_1t.tsv $H8" )
for k in "$@"; do
  if [ -z "${HW[$k]+x}" ]; then echo "replay.sh: unknown table key '$k'" >&2; exit 2; fi
done
mkdir -p "$OUT/tables" || exit 2
for f in s11_1t_c s10_1t_a s10_1t_b s8_1t_min s7_1t s5_1t; do
  grep -v gemm "$R/aura_search_$f.tsv" > "$OUT/tables/aura_search_$f.tsv" || exit 2
done
python3 bench/aura_merge_tables.py "$S/aura_search_s16_2t_loaded.tsv" "$S/aura_search_s16b_2t_loaded.tsv" \
  "$OUT/tables/s16ab.tsv" > /dev/null || exit 2
for k in "$@"; do
  set -- ${HW[$k]}
  TMPDIR=/dev/shm nice -n 19 "$BIN" --loo --pass-level --hw "$2" --tables "$1" > "$OUT/$k.log" 2>&1
  echo "$k rc $?"
done
