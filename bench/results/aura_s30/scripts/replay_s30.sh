#!/bin/bash
# replay_s30.sh BIN OUTDIR: session 30's leave-one-shape-out replays on the re-timed tables (nothing
# is timed). Merges each space's two repeats (aura_merge_tables.py: repeat a's passes, then b's) and
# builds three replay tables in OUTDIR/tables, each the re-timed spaces with the other shapes of the
# same kernel and thread count (the skills a space learns from):
#   gemm2t: GEMM 512x512x2048 and 2048x1024x256 (20 passes) and the four other v4-micro classes
#           (8 passes), two threads;
#   ce2t:   cross-entropy 2048x8192 (28 passes) and the three other shapes (24 passes), two threads;
#   rows1t: RMSNorm 768x4096 (16 passes), one thread, with session 28's post-fix one-thread row
#           tables (bench/results/rows_s28/tables: t_rows8, t_rms16 less its 768x4096 and the
#           512x4096 that t_rows8 holds).
# Then `BIN --loo --pass-level` (and --why) on each, one log per table in OUTDIR; niced (NICE,
# default 5), TMPDIR=/dev/shm. Extra arguments to BIN: ARGS. Run from the repository root.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ]; then
  echo "replay_s30.sh: usage: replay_s30.sh BIN OUTDIR (BIN an executable aura_search_bench)" >&2; exit 2
fi
BIN=$1; OUT=$2; T=bench/results/aura_s30/tables; R=bench/results/rows_s28/tables
H=bench/results/aura_s27/hw_s26_idle.toml
mkdir -p "$OUT/tables" || exit 2
for s in g512 g2048 g4 ce2048 ce3 one; do
  python3 bench/aura_merge_tables.py "$T/t_${s}_a.tsv" "$T/t_${s}_b.tsv" "$OUT/tables/m_$s.tsv" > /dev/null || exit 2
done
cat "$OUT/tables/m_g512.tsv" "$OUT/tables/m_g2048.tsv" "$OUT/tables/m_g4.tsv" > "$OUT/tables/gemm2t.tsv"
cat "$OUT/tables/m_ce2048.tsv" "$OUT/tables/m_ce3.tsv" > "$OUT/tables/ce2t.tsv"
(cat "$R/t_rows8.tsv"; grep -v '768x4096\|512x4096' "$R/t_rms16.tsv"; grep -h rmsnorm "$OUT/tables/m_one.tsv") \
  > "$OUT/tables/rows1t.tsv"
for k in gemm2t ce2t rows1t; do
  TMPDIR=/dev/shm nice -n ${NICE:-5} "$BIN" --loo --pass-level ${ARGS:-} --hw $H --tables "$OUT/tables/$k.tsv" \
    > "$OUT/$k.log" 2> "$OUT/$k.err"
  echo "$k rc $?"
  TMPDIR=/dev/shm nice -n ${NICE:-5} "$BIN" --why --pass-level ${ARGS:-} --hw $H --tables "$OUT/tables/$k.tsv" \
    > "$OUT/${k}_why.log" 2> "$OUT/${k}_why.err"
  echo "${k}_why rc $?"
done
# The one-thread cross-entropy 512x8192 (session 27's miss) alone: its goals (a) and (b).
TMPDIR=/dev/shm nice -n ${NICE:-5} "$BIN" --loo --pass-level --hw $H --tables "$OUT/tables/m_one.tsv" > "$OUT/one1t.log" 2>&1
echo "one1t rc $?"
