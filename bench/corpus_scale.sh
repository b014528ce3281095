#!/usr/bin/env bash
# The corpus engine at scale (issue 21): one `trex data gen` run of the default mixture, with
# its peak RSS split into anonymous memory (the dedup page cache) and mapped files, CPU time
# and page faults. Throughput on a loaded machine depends on the load; compare CPU per
# candidate, and run the builds to compare one after the other in one session.
#
# Usage: bench/corpus_scale.sh TREX_BINARY COUNT OUT_DIR [extra trex data gen flags...]
#   e.g. bench/corpus_scale.sh build/trex 100000 /tmp/scale-100k --dedup-memory 64
# Prints: the load, peak RssAnon/RssFile (kB, /proc/PID/status polled every 0.25 s; RssAnon
# includes up to 64 MiB of freed 2-32 MiB buffers core::aligned_free keeps mapped for reuse), the
# /usr/bin/time -v peak RSS, user/sys CPU, minor faults, the manifest's samples/s and
# near-duplicate share, CPU per candidate, and the bytes on disk per sample (data/, cpt/ and sft/
# parts together). OUT_DIR is removed first and kept afterwards.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 TREX_BINARY COUNT OUT_DIR [flags...]" >&2; exit 2; }
bin=$1 n=$2 out=$3
shift 3
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$out"
echo "== $bin count=$n | load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v -o "$out.time" "$bin" data gen --config "$repo/configs/data/default.toml" --count "$n" --seed 1 \
  --threads 2 --out "$out" --quiet "$@" > "$out.log" 2>&1 &
tpid=$!
pid=""
for _ in $(seq 100); do pid=$(pgrep -P $tpid | head -1 || true); [[ -n $pid ]] && break; sleep 0.05; done
anon=0 file=0
while [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; do
  read -r a f < <(awk '/RssAnon/{a=$2} /RssFile/{f=$2} END{print a+0, f+0}' "/proc/$pid/status" 2>/dev/null || echo "0 0")
  (( a > anon )) && anon=$a
  (( f > file )) && file=$f
  sleep 0.25
done
wait $tpid || { cat "$out.log" >&2; exit 1; }
echo "peak RssAnon $anon kB, peak RssFile $file kB"
grep -E "Maximum resident|User time|System time|Minor|Elapsed" "$out.time"
/usr/bin/python3 -c "
import json, os, re, sys
out, tfile = sys.argv[1], sys.argv[2]
m = json.load(open(out + '/manifest.json'))
near = m['per_reason'].get('duplicate_near', {}).get('share_of_generated', 0)
t = open(tfile).read()
cpu = sum(float(re.search(k + r' time \\(seconds\\): ([0-9.]+)', t).group(1)) for k in ('User', 'System'))
disk = sum(os.path.getsize(os.path.join(out, d, f)) for d in ('data', 'cpt', 'sft') for f in os.listdir(os.path.join(out, d)))
print('samples', m['samples'], 'candidates', m['candidates'], 'samples/s %.1f' % m['samples_per_second'],
      'near-duplicates %.2f%%' % (100 * near), 'CPU/candidate %.3f ms' % (1000 * cpu / m['candidates']),
      'disk %.2f KB/sample' % (disk / 1000 / m['samples']))" "$out" "$out.time"
echo "== end | load $(cut -d' ' -f1-3 /proc/loadavg)"
