#!/bin/bash
# calibrate.sh BIN OUTDIR: `BIN --calibrate $CAL_ARGS --pass-level` (aura_search_bench, session 27) on every saved table
# that replays with this code (bench/results/aura_s16/replay.sh's keys, session 17's six GEMM
# spaces, session 18's nine), niced (NICE, default 5, as builds), TMPDIR=/dev/shm, one log per table in OUTDIR. Run from the
# repository root. Replays only: nothing is timed, so it needs no quiet lane.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ]; then
  echo "calibrate.sh: usage: calibrate.sh BIN OUTDIR (BIN an executable aura_search_bench)" >&2; exit 2
fi
BIN=$1; OUT=$2
R=bench/results; S=$R/aura_s16
H32=$R/profile_v4_micro_machine2_l3_32m.toml; H8=$R/profile_v4_micro_machine2_l3_8m.toml; H17=$R/aura_s17/hw_s17_idle.toml
mkdir -p "$OUT/tables" || exit 2
for f in s11_1t_c s10_1t_a s10_1t_b s8_1t_min s7_1t s5_1t; do
  grep -v gemm "$R/aura_search_$f.tsv" > "$OUT/tables/aura_search_$f.tsv" || exit 2
done
python3 bench/aura_merge_tables.py "$S/aura_search_s16_2t_loaded.tsv" "$S/aura_search_s16b_2t_loaded.tsv" \
  "$OUT/tables/s16ab.tsv" > /dev/null || exit 2
while read -r k t h; do
  TMPDIR=/dev/shm nice -n ${NICE:-5} "$BIN" --calibrate ${CAL_ARGS:-} --pass-level --hw "$h" --tables "$t" > "$OUT/$k.log" 2> "$OUT/$k.err"
  echo "$k rc $?"
done <<LIST
s16 $S/aura_search_s16_2t_loaded.tsv $S/hw_s16.toml
s16b $S/aura_search_s16b_2t_loaded.tsv $S/hw_s16.toml
s16ab $OUT/tables/s16ab.tsv $S/hw_s16.toml
s15 $R/aura_s15/aura_search_s15_2t_loaded.tsv $R/aura_s15/hw_s15.toml
s14 $R/idle_s14/aura_search_s14_2t_idle.tsv $H32
s13 $R/idle_s13/aura_search_s13_2t_idle.tsv $H32
s11i $R/aura_search_s11_2t_idle.tsv $H32
s11c $R/aura_search_s11_2t_c.tsv $H32
s10a $R/aura_search_s10_2t_a.tsv $H32
s10b $R/aura_search_s10_2t_b.tsv $H32
s8 $R/aura_search_s8_2t_min.tsv $H32
s7 $R/aura_search_s7_2t.tsv $H32
s5 $R/aura_search_s5_2t.tsv $H8
1s11c $OUT/tables/aura_search_s11_1t_c.tsv $H32
1s10a $OUT/tables/aura_search_s10_1t_a.tsv $H32
1s10b $OUT/tables/aura_search_s10_1t_b.tsv $H32
1s8 $OUT/tables/aura_search_s8_1t_min.tsv $H32
1s7 $OUT/tables/aura_search_s7_1t.tsv $H32
1s5 $OUT/tables/aura_search_s5_1t.tsv $H8
gemm6 $R/aura_s17/aura_search_s17_gemm6_1t.tsv $H17
narrow $R/aura_s18/goal_c/t_narrow.tsv $H17
short $R/aura_s18/goal_c/t_short.tsv $H17
LIST
