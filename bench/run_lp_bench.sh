#!/usr/bin/env bash
# The lp benchmarks side by side with the baselines, in one run (see bench/README.md):
#   1. lp_solve_bench (Google Benchmark): parse and in-process solve throughput, medians;
#   2. CLI throughput, one process per model: `trex solve` vs `cbc FILE solve` vs `glpsol --lp`,
#      with an objective check of every Bench4Opt file (trex vs cbc, trex vs glpsol);
#   3. CLI start-up: hyperfine on no-op invocations and on a two-variable LP;
#   4. real models: bench/real_models.py over the model files Debian ships (REAL_TIME_LIMIT s,
#      default 60, per model and tool), into bench/results/real_models.md.
# Writes bench/results/lp_bench.md (replaced as a whole) and keeps raw outputs in
# BUILD/bench-lp/.
#
# Usage: bench/run_lp_bench.sh [BUILD_DIR]     (default: build; relative to the current
#        directory, else to the repository root). Works from any directory.
# Environment: REPS (default 5) repetitions; CLI_FILES (default 100) files in the CLI
#        throughput subset (0: all linear files); TREX_DATA_DIR (default ../shared/data beside
#        the repository) the benchmark data. Without the data the corpus parts are skipped.
set -euo pipefail
export LC_ALL=C

die() { echo "run_lp_bench: $*" >&2; exit 1; }
say() { echo "== $*" >&2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ARG=${1:-build}
if [[ -d $BUILD_ARG ]]; then
  BUILD=$(cd "$BUILD_ARG" && pwd)
elif [[ -d $REPO/$BUILD_ARG ]]; then
  BUILD=$(cd "$REPO/$BUILD_ARG" && pwd)
else
  die "build directory '$BUILD_ARG' not found (build first: make build, or cmake -S . -B $BUILD_ARG -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD_ARG)"
fi
TREX=$BUILD/trex
BENCH=$BUILD/lp_solve_bench
for b in "$TREX" "$BENCH"; do
  [[ -x $b ]] || die "$b is missing: build it first (cmake --build $BUILD; lp_solve_bench needs TREX_BUILD_BENCH=ON)"
done

REPS=${REPS:-5}
CLI_FILES=${CLI_FILES:-100}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"
[[ $CLI_FILES =~ ^[0-9]+$ ]] || die "CLI_FILES must be a non-negative integer, not '$CLI_FILES'"
export TREX_DATA_DIR=${TREX_DATA_DIR:-$REPO/../shared/data}
CORPUS_REL=or-benchmarks/bench4opt/slai_trex/bench4opt_feasible/lp_code
CORPUS=$TREX_DATA_DIR/$CORPUS_REL
HAVE_DATA=0
if compgen -G "$CORPUS/*.lp" >/dev/null; then HAVE_DATA=1; fi
have() { command -v "$1" >/dev/null 2>&1; }
HAVE_CBC=0; have cbc && HAVE_CBC=1
HAVE_GLPSOL=0; have glpsol && HAVE_GLPSOL=1
HAVE_HYPERFINE=0; have hyperfine && HAVE_HYPERFINE=1
GLPSOL_TMLIM=5  # seconds per model for glpsol, as the glpk back end gets in lp_solve_bench

RAW=$BUILD/bench-lp
rm -rf "$RAW"
mkdir -p "$RAW" "$REPO/bench/results"
OUT=$REPO/bench/results/lp_bench.md
MD=$(mktemp "$REPO/bench/results/.lp_bench.md.XXXXXX")
trap 'rm -f "$MD"' EXIT

# --- small helpers -------------------------------------------------------------------------
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
calc() { awk "BEGIN {printf \"$1\", $2}"; }  # calc FORMAT EXPR
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f", b - a}'; }
md() { printf '%s\n' "$*" >>"$MD"; }
# (No `| head` or `grep -m1` after a producer in this script: with pipefail, the producer's
# SIGPIPE would fail the pipeline and set -e would end the run.)
version_of() { local v; v=$("$@" 2>&1 || true); v=$(grep -Eo '[0-9]+\.[0-9]+(\.[0-9]+)?' <<<"$v" || true); echo "${v%%$'\n'*}"; }

CPU=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
md "# lp benchmarks: trex vs CBC and GLPK"
md ""
md "Written by \`bench/run_lp_bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Medians of $REPS repetitions."
md ""
md "- machine: $(nproc) CPUs ($CPU), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
md "- $("$TREX" --version 2>&1) (build: \`$BUILD\`)"
md "- baselines: $( ((HAVE_CBC)) && echo "cbc $(version_of cbc -quit)" || echo "cbc absent"), $( ((HAVE_GLPSOL)) && echo "glpsol $(version_of glpsol --version)" || echo "glpsol absent"), $( ((HAVE_HYPERFINE)) && echo "hyperfine $(version_of hyperfine --version)" || echo "hyperfine absent")"
md "- data: \`$CORPUS\` ($( ((HAVE_DATA)) && echo "$(ls "$CORPUS"/*.lp | wc -l) files, $(cat "$CORPUS"/*.lp | wc -c) bytes" || echo "ABSENT: corpus parts skipped"))"
md "- ratios are speed ratios, **baseline time ÷ trex time** (= trex rate ÷ baseline rate): above 1 trex is faster"
md ""

# --- 1. Google Benchmark -----------------------------------------------------------------
say "1/3 lp_solve_bench, $REPS repetitions (several minutes: each corpus pass solves 336 models)"
# Random interleaving: the repetitions of all benchmarks run in a shuffled order, so a burst of
# load from other jobs spreads over all of them instead of hitting one benchmark's five runs.
GB_ARGS=(--benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true --benchmark_color=false
         --benchmark_enable_random_interleaving=true
         --benchmark_out="$RAW/lp_solve_bench.json" --benchmark_out_format=json)
"$BENCH" "${GB_ARGS[@]}" 2>"$RAW/lp_solve_bench.stderr" | tee "$RAW/lp_solve_bench.txt" >&2
# One line per benchmark: "OK name time_s models unsolved limited wall_s" from its _median row
# (wall_s: the wall_s counter where there is one, the thread benchmark's; else Time, which
# is the wall time of one pass under UseRealTime and Iterations(1)), or "ERR name message".
awk -v reps="$REPS" '
  function norm(n) { gsub(/\/(min_time:[0-9.]+|iterations:[0-9]+|real_time)/, "", n); return n }
  function num(x,   u, v) {  # Google Benchmark human-readable numbers: 1.5k, 534.2m, 12/s
    sub(/\/s$/, "", x); u = substr(x, length(x)); v = x + 0
    if (u == "k") v *= 1e3; else if (u == "M") v *= 1e6; else if (u == "G") v *= 1e9
    else if (u == "m") v *= 1e-3; else if (u == "u") v *= 1e-6; else if (u == "n") v *= 1e-9
    return v
  }
  # With one repetition there are no aggregate rows: take the run itself.
  ($1 ~ /_median$/ || (reps == 1 && $1 ~ /^BM_/ && $2 != "ERROR")) {
    n = $1; if (n ~ /_median$/) n = substr(n, 1, length(n) - 7); n = norm(n); t = $2
    if ($3 == "ns") t /= 1e9; else if ($3 == "us") t /= 1e6; else if ($3 == "ms") t /= 1e3
    models = "nan"; unsolved = 0; tl = 0; wall = t
    for (i = 7; i <= NF; i++) {
      split($i, kv, "=")
      if (kv[1] == "models") models = num(kv[2])
      if (kv[1] == "unsolved") unsolved = num(kv[2])
      if (kv[1] == "time_limited") tl = num(kv[2])
      if (kv[1] == "wall_s") wall = num(kv[2])
    }
    print "OK", n, t, models, unsolved, tl, wall
  }
  $2 == "ERROR" && !seen[$1]++ { msg = $0; sub(/^[^ ]+ +ERROR OCCURRED: /, "", msg); print "ERR", norm($1), msg }
' "$RAW/lp_solve_bench.txt" >"$RAW/gb_medians.txt"
gb_time() { awk -v n="$1" '$1 == "OK" && $2 == n {print $3}' "$RAW/gb_medians.txt"; }
gb_field() { awk -v n="$1" -v f="$2" '$1 == "OK" && $2 == n {print $f}' "$RAW/gb_medians.txt"; }
gb_rate() {  # models per wall second
  local t m; t=$(gb_field "$1" 7); m=$(gb_field "$1" 4)
  [[ -n $t ]] && calc "%.1f" "$m / $t" || echo "n/a"
}
ratio() {  # ratio A B: A / B, or n/a
  [[ $1 =~ ^[0-9.e+-]+$ && $2 =~ ^[0-9.e+-]+$ ]] && awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}' || echo "n/a"
}

md "## 1. In-process throughput (\`lp_solve_bench\`, Google Benchmark 1.7.1)"
md ""
md "Median over $REPS repetitions of the wall time of one pass; models/s = models in the pass ÷ that time."
md "For the thread benchmark the wall time is its own \`wall_s\` counter (first thread start to last thread end), not Google Benchmark's Time column, which 1.7.1 averages over threads and divides by their summed iterations."
md "\"unsolved\" counts models returned without a solution, \"limit\" those stopped by the 5 s per-model limit (glpk only; the other back ends run without one)."
md ""
md "| benchmark | what one pass does | models | median wall s / pass | models/s | unsolved | limit |"
md "|---|---|---:|---:|---:|---:|---:|"
declare -A WHAT=(
  [BM_ParseCorpus]="read_lp of every Bench4Opt feasible file"
  [BM_SolveCorpus/auto]="solve every linear corpus model (336 of 344), back end auto"
  [BM_SolveCorpus/cbc]="same, back end cbc (in-process CBC/CLP)"
  [BM_SolveCorpus/glpk]="same, back end glpk (one glpsol process per model)"
  [BM_SolveSynthetic/auto]="200 generated MILPs (knapsack, generalized assignment), auto"
  [BM_SolveSynthetic/cbc]="same, cbc"
  [BM_SolveSynthetic/glpk]="same, glpk (glpsol process per model)"
  [BM_SolveCorpusThreads/threads:1]="linear corpus, auto, 1 thread pulling from a shared queue"
  [BM_SolveCorpusThreads/threads:2]="same, 2 threads"
)
GB_ORDER=(BM_ParseCorpus BM_SolveCorpus/auto BM_SolveCorpus/cbc BM_SolveCorpus/glpk BM_SolveSynthetic/auto
          BM_SolveSynthetic/cbc BM_SolveSynthetic/glpk BM_SolveCorpusThreads/threads:1 BM_SolveCorpusThreads/threads:2)
for n in "${GB_ORDER[@]}"; do
  t=$(gb_time "$n")
  if [[ -n $t ]]; then
    md "| \`$n\` | ${WHAT[$n]} | $(gb_field "$n" 4) | $(calc "%.3f" "$(gb_field "$n" 7)") | $(gb_rate "$n") | $(gb_field "$n" 5) | $(gb_field "$n" 6) |"
  else
    err=$(awk -v n="$n" '$1 == "ERR" && $2 == n {$1 = ""; $2 = ""; sub(/^ +/, ""); print}' "$RAW/gb_medians.txt")
    md "| \`$n\` | ${WHAT[$n]} | | skipped: ${err:-not run} | | | |"
  fi
done
md ""
if [[ -n $(gb_time BM_ParseCorpus) ]]; then
  md "Parse: $(calc "%.1f" "$(cat "$CORPUS"/*.lp | wc -c) / 1048576 / $(gb_time BM_ParseCorpus)") MiB/s of LP text."
  md ""
fi
md "| ratio | value | meaning |"
md "|---|---:|---|"
md "| corpus: cbc ÷ glpk models/s | $(ratio "$(gb_rate BM_SolveCorpus/cbc)" "$(gb_rate BM_SolveCorpus/glpk)") | in-process CBC vs GLPK through a process per model (glpk's pass includes its time-outs, see "limit") |"
md "| corpus: auto ÷ cbc models/s | $(ratio "$(gb_rate BM_SolveCorpus/auto)" "$(gb_rate BM_SolveCorpus/cbc)") | cost of auto's routing (≈1 expected) |"
md "| synthetic: cbc ÷ glpk models/s | $(ratio "$(gb_rate BM_SolveSynthetic/cbc)" "$(gb_rate BM_SolveSynthetic/glpk)") | in-process vs a process per model, on small MILPs |"
md "| synthetic: auto ÷ cbc models/s | $(ratio "$(gb_rate BM_SolveSynthetic/auto)" "$(gb_rate BM_SolveSynthetic/cbc)") | |"
md "| corpus: 2 threads ÷ 1 thread models/s | $(ratio "$(gb_rate BM_SolveCorpusThreads/threads:2)" "$(gb_rate BM_SolveCorpusThreads/threads:1)") | speed-up on $(nproc) CPUs (2.0 is perfect; the few slowest models bound it) |"
md ""

# --- 2. CLI throughput and objective agreement -------------------------------------------
md "## 2. Command-line throughput, one process per model"
md ""
if ((!HAVE_DATA)); then
  say "2/3 skipped: no Bench4Opt data under $TREX_DATA_DIR (set TREX_DATA_DIR)"
  md "Skipped: no Bench4Opt data at \`$CORPUS\` (set TREX_DATA_DIR)."
  md ""
else
  # glpsol's CPLEX LP reader rejects bracketed names (x[0]) and a bare objective constant, so
  # it reads copies with plain names (x<j>, r<i>; the constant on a variable fixed at 1),
  # written by lp_solve_bench from the same parsed models; quadratic models are left out.
  GLP_DIR=$RAW/glpsol_lp
  "$BENCH" --export_glpsol_lp="$GLP_DIR" >/dev/null || die "lp_solve_bench --export_glpsol_lp failed"
  mapfile -t ALL < <(cd "$CORPUS" && ls -- *.lp | sort)
  mapfile -t LINEAR < <(cd "$GLP_DIR" && ls -- *.lp | sort)
  mapfile -t QUAD < <(comm -23 <(printf '%s\n' "${ALL[@]}") <(printf '%s\n' "${LINEAR[@]}"))
  declare -A IS_QUAD=()
  for f in "${QUAD[@]}"; do IS_QUAD[$f]=1; done

  # 2a. Every file once, each tool timed on its own: objectives, statuses, per-model times.
  say "2/3 CLI: every corpus file once through trex, cbc and glpsol (objective check; ~2 minutes)"
  SANITY=$RAW/cli_every_file.tsv
  printf 'file\tquadratic\ttrex_status\ttrex_obj\ttrex_s\tcbc_status\tcbc_obj\tcbc_s\tglpsol_status\tglpsol_obj\tglpsol_s\n' >"$SANITY"
  for f in "${ALL[@]}"; do
    t0=$EPOCHREALTIME
    out=$("$TREX" solve "$CORPUS/$f" --json 2>/dev/null || true)
    ts=$(since "$t0")
    tstat=$(sed -n 's/.*"status":"\([^"]*\)".*/\1/p' <<<"$out"); tobj=$(sed -n 's/.*"objective":\([^,]*\),.*/\1/p' <<<"$out")
    cstat=-; cobj=-; cs=-
    if ((HAVE_CBC)); then
      t0=$EPOCHREALTIME
      out=$(cbc "$CORPUS/$f" solve 2>&1 || true)
      cs=$(since "$t0")
      # MIP: "Result - Optimal solution found"; LP: "Optimal - objective value X".
      cstat=$(awk '/errors on input/ {r = "input_error"} /^Result - / {sub(/^Result - /, ""); r = $0} /^(Optimal|Primal infeasible|Dual infeasible|Stopped)/ && l == "" {l = $0; sub(/ - objective.*/, "", l)}
                   END {s = (r != "" ? r : l); gsub(/ /, "_", s); print s}' <<<"$out")
      cobj=$(awk '/^Objective value:/ {v = $3} /^Optimal objective / && v == "" {v = $3} END {print v}' <<<"$out")
    fi
    gstat=-; gobj=-; gs=-
    if ((HAVE_GLPSOL)) && [[ -z ${IS_QUAD[$f]:-} ]]; then
      t0=$EPOCHREALTIME
      glpsol --lp "$GLP_DIR/$f" --tmlim "$GLPSOL_TMLIM" -o "$RAW/glpsol.out" >/dev/null 2>&1 || true
      gs=$(since "$t0")
      gstat=$(awk '/^Status:/ {$1 = ""; sub(/^ +/, ""); gsub(/ /, "_"); print; exit}' "$RAW/glpsol.out" 2>/dev/null || true)
      gobj=$(awk '/^Objective:/ {print $4; exit}' "$RAW/glpsol.out" 2>/dev/null || true)
      rm -f "$RAW/glpsol.out"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "${IS_QUAD[$f]:-0}" "${tstat:--}" "${tobj:--}" "$ts" \
      "${cstat:--}" "${cobj:--}" "$cs" "${gstat:--}" "${gobj:--}" "$gs" >>"$SANITY"
  done

  # 2b. Throughput: a fixed subset of the linear files (every k-th of the sorted list), all
  # tools interleaved within each repetition so that drifting load hits them alike.
  n=${#LINEAR[@]}
  if ((CLI_FILES == 0 || CLI_FILES >= n)); then SUB=("${LINEAR[@]}"); else
    SUB=(); for ((k = 0; k < CLI_FILES; k++)); do SUB+=("${LINEAR[k * n / CLI_FILES]}"); done
  fi
  printf '%s\n' "${SUB[@]}" >"$RAW/cli_subset.txt"
  say "2/3 CLI throughput: ${#SUB[@]} linear files, $REPS repetitions"
  : >"$RAW/cli_throughput.tsv"
  for ((r = 1; r <= REPS; r++)); do
    t0=$EPOCHREALTIME
    for f in "${SUB[@]}"; do "$TREX" solve "$CORPUS/$f" >/dev/null 2>&1 || true; done
    printf 'trex\t%s\n' "$(since "$t0")" >>"$RAW/cli_throughput.tsv"
    if ((HAVE_CBC)); then
      t0=$EPOCHREALTIME
      for f in "${SUB[@]}"; do cbc "$CORPUS/$f" solve >/dev/null 2>&1 || true; done
      printf 'cbc\t%s\n' "$(since "$t0")" >>"$RAW/cli_throughput.tsv"
    fi
    if ((HAVE_GLPSOL)); then
      t0=$EPOCHREALTIME
      for f in "${SUB[@]}"; do glpsol --lp "$GLP_DIR/$f" --tmlim "$GLPSOL_TMLIM" >/dev/null 2>&1 || true; done
      printf 'glpsol\t%s\n' "$(since "$t0")" >>"$RAW/cli_throughput.tsv"
    fi
    echo "   repetition $r: $(awk -v r="$r" '{t[$1] = $2} END {for (k in t) printf "%s %.2f s  ", k, t[k]}' "$RAW/cli_throughput.tsv")" >&2
  done
  cli_med() { awk -v t="$1" '$1 == t {print $2}' "$RAW/cli_throughput.tsv" | median; }
  T_TREX=$(cli_med trex); T_CBC=$( ((HAVE_CBC)) && cli_med cbc || echo n/a); T_GLP=$( ((HAVE_GLPSOL)) && cli_med glpsol || echo n/a)
  rate() { [[ $1 == n/a ]] && echo n/a || calc "%.1f" "${#SUB[@]} / $1"; }

  md "### 2a. Throughput: ${#SUB[@]} linear files (fixed subset: every $(calc "%.2f" "$n / ${#SUB[@]}")th of the $n sorted linear files; list in \`bench-lp/cli_subset.txt\`), median of $REPS"
  md ""
  md "| tool | command per file | median total s | models/s | speed ratio (tool time ÷ trex time) |"
  md "|---|---|---:|---:|---:|"
  md "| trex | \`trex solve FILE\` (default back end auto) | $(calc "%.2f" "$T_TREX") | $(rate "$T_TREX") | 1.00 |"
  if ((HAVE_CBC)); then md "| cbc | \`cbc FILE solve\` | $(calc "%.2f" "$T_CBC") | $(rate "$T_CBC") | $(ratio "$T_CBC" "$T_TREX") |"; fi
  if ((HAVE_GLPSOL)); then md "| glpsol | \`glpsol --lp PLAIN_FILE --tmlim $GLPSOL_TMLIM\` (plain-name copy) | $(calc "%.2f" "$T_GLP") | $(rate "$T_GLP") | $(ratio "$T_GLP" "$T_TREX") |"; fi
  md ""

  # Per-file pass summaries.
  summary() {  # summary COLUMN_OF_SECONDS -> "files total_s models_per_s median_ms"
    awk -F'\t' -v c="$1" 'NR > 1 && $c != "-" {n++; s += $c; print $c > "/dev/stderr"} END {printf "%d %.2f %.1f", n, s, n / s}' "$SANITY" 2>"$RAW/col.txt"
    printf ' %s\n' "$(median <"$RAW/col.txt" | awk '{printf "%.1f", $1 * 1000}')"
  }
  read -r NT ST RT MT <<<"$(summary 5)"
  md "### 2b. Every file once (one pass, each run timed alone; per-file table in \`bench-lp/cli_every_file.tsv\`)"
  md ""
  md "| tool | files | total s | models/s | median ms per model |"
  md "|---|---:|---:|---:|---:|"
  md "| trex | $NT | $ST | $RT | $MT |"
  if ((HAVE_CBC)); then read -r NC SC RC MC <<<"$(summary 8)"; md "| cbc | $NC | $SC | $RC | $MC |"; fi
  if ((HAVE_GLPSOL)); then read -r NG SG RG MG <<<"$(summary 11)"; md "| glpsol (linear files, ${GLPSOL_TMLIM} s limit) | $NG | $SG | $RG | $MG |"; fi
  md ""
  md "Slowest files for each tool (s):"
  md ""
  for c in 5 8 11; do
    name=$(awk -F'\t' -v c="$c" 'NR == 1 {sub(/_s$/, "", $c); print $c}' "$SANITY")
    line=$(awk -F'\t' -v c="$c" 'NR > 1 && $c != "-" {print $c, $1}' "$SANITY" | sort -gr | awk 'NR <= 4 {printf "%s%s %.2f", (NR > 1 ? ", " : ""), $2, $1}')
    if [[ -n $line ]]; then md "- $name: $line"; fi
  done
  md ""

  # Objective agreement: |a - b| <= 1e-6 max(1, |b|).
  md "### 2c. Objective agreement (|a − b| ≤ 1e-6·max(1, |b|))"
  md ""
  AGREE=$(awk -F'\t' '
    function ok(a, b) { d = a - b; if (d < 0) d = -d; m = (b < 0 ? -b : b); if (m < 1) m = 1; return d <= 1e-6 * m }
    function num(x) { return x ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ }
    NR == 1 { next }
    {
      lin = ($2 == 0)
      if ($8 != "-") {  # cbc was run
        if (lin) { nc++; if (num($4) && num($7) && ok($7, $4)) ac++; else mc = mc sprintf("\n- `%s`: trex %s %s, cbc %s %s", $1, $3, $4, $6, $7) }
        else qc = qc sprintf("\n- `%s`: trex %s %s, cbc %s %s%s", $1, $3, $4, $6, $7, (num($4) && num($7) && ok($7, $4)) ? " (agree)" : "")
      }
      if ($11 != "-") {  # glpsol was run
        ng++
        if (num($4) && num($10) && ok($10, $4) && $9 ~ /OPTIMAL/ && $9 !~ /NON/) ag++
        else mg = mg sprintf("\n- `%s`: trex %s %s, glpsol %s %s", $1, $3, $4, $9, $10)
      }
      if ($3 != "optimal") nt = nt sprintf(" `%s` (%s)", $1, $3)
    }
    END {
      printf "trex status other than optimal:%s\n\n", (nt == "" ? " none" : nt)
      if (nc) printf "**trex vs cbc, linear files: %d of %d agree.** Mismatches:%s\n\n", ac, nc, (mc == "" ? " none" : mc)
      if (qc != "") printf "Quadratic files (expected to differ: CBC'"'"'s LP reader rejects some quadratic files and drops the quadratic terms of others):%s\n\n", qc
      if (ng) printf "**trex vs glpsol, linear files: %d of %d agree** (optimal status and value). Others:%s\n", ag, ng, (mg == "" ? " none" : mg)
    }' "$SANITY")
  md "$AGREE"
  md ""
fi

# --- 3. Start-up time ----------------------------------------------------------------------
md "## 3. Command-line start-up (hyperfine)"
md ""
if ((!HAVE_HYPERFINE)); then
  say "3/3 skipped: hyperfine not found"
  md "Skipped: hyperfine not found (Debian package hyperfine)."
else
  say "3/3 start-up: hyperfine --warmup 3 --runs 30"
  TINY=$RAW/tiny.lp
  printf 'Minimize\n obj: x + 2 y\nSubject To\n c1: x + y >= 1\nEnd\n' >"$TINY"
  NOOP=("$TREX --version"); SOLVE=("$TREX solve $TINY")
  if ((HAVE_CBC)); then NOOP+=("cbc -quit"); SOLVE+=("cbc $TINY solve"); fi
  if ((HAVE_GLPSOL)); then NOOP+=("glpsol --version"); SOLVE+=("glpsol --lp $TINY"); fi
  HF=(hyperfine -N --warmup 3 --runs 30 --style basic)
  "${HF[@]}" --export-json "$RAW/startup_noop.json" --export-csv "$RAW/startup_noop.csv" "${NOOP[@]}" >&2
  "${HF[@]}" --export-json "$RAW/startup_tiny.json" --export-csv "$RAW/startup_tiny.csv" "${SOLVE[@]}" >&2
  md "\`hyperfine -N --warmup 3 --runs 30\` (no shell in between). Median and mean ± sd in milliseconds."
  md ""
  md "| command | median ms | mean ± sd ms | min ms | speed ratio (command ÷ trex) |"
  md "|---|---:|---:|---:|---:|"
  for csv in "$RAW/startup_noop.csv" "$RAW/startup_tiny.csv"; do
    awk -F, -v build="$BUILD/" -v raw="$RAW/" '
      NR == 1 { next }
      { cmd = $1; gsub(build, "", cmd); gsub(raw, "", cmd); if (NR == 2) ref = $4
        printf "| `%s` | %.2f | %.2f ± %.2f | %.2f | %.2f |\n", cmd, $4 * 1000, $2 * 1000, $3 * 1000, $7 * 1000, $4 / ref }' "$csv" >>"$MD"
  done
  md ""
  md "The first group does nothing (print the version or quit); the second reads and solves a two-variable LP (\`bench-lp/tiny.lp\`)."
fi
md ""
# --- 4. Real models -------------------------------------------------------------------------
# Every MPS/LP file Debian's COIN-OR and GLPK packages ship, and GLPK's MathProg examples,
# through trex, cbc and glpsol (bench/real_models.py writes its own table).
REAL_TIME_LIMIT=${REAL_TIME_LIMIT:-60}
say "4/4 real models: bench/real_models.py, ${REAL_TIME_LIMIT} s per model and tool (long: up to an hour)"
/usr/bin/python3 "$REPO/bench/real_models.py" "$TREX" "$REPO/bench/results/real_models.md" \
  --time-limit "$REAL_TIME_LIMIT" --raw "$RAW" || die "bench/real_models.py failed"
md "## 4. Real models"
md ""
md "Debian's COIN-OR and GLPK model files and GLPK's MathProg examples, solved by trex, cbc and glpsol: [real_models.md](real_models.md)."
md ""
md "## Commands"
md ""
md "\`\`\`"
md "bench/run_lp_bench.sh $BUILD_ARG        # REPS=$REPS CLI_FILES=$CLI_FILES; make bench runs the same"
md "$BENCH ${GB_ARGS[*]}"
md "trex solve FILE  |  cbc FILE solve  |  glpsol --lp PLAIN_FILE --tmlim $GLPSOL_TMLIM     # per file, one process each"
md "hyperfine -N --warmup 3 --runs 30 --export-json ... '<trex --version>' 'cbc -quit' 'glpsol --version'"
md "\`\`\`"
md ""
md "Raw outputs (Google Benchmark JSON and console text, per-file CLI table, hyperfine JSON/CSV) are in \`$RAW\`."
md "The machine is shared: other jobs ran alongside (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)); compare ratios from one run rather than absolute numbers across runs."

chmod 644 "$MD"
mv -f "$MD" "$OUT"
trap - EXIT
say "wrote $OUT"
cat "$OUT"
