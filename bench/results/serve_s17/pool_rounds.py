#!/usr/bin/env python3
"""Pools prefill_chunk_bench raw outputs (files with "== NAME pass" headers): medians over every round per
binary, chunk and measure, then how often chunk 64 beat chunk 0 in the same round.  pool_rounds.py FILE..."""
import re, statistics, sys
# pooled medians over every round of the given raw files, per binary and chunk
res = {}
for f in sys.argv[1:]:
    who = None
    for line in open(f):
        m = re.match(r"== (\w+) pass", line)
        if m: who = m.group(1); continue
        if not line.startswith("round"): continue
        for c, body in re.findall(r"\[chunk (\d+): ([^\]]*)\]", line):
            for k, w, u in re.findall(r"(\w+) ([\d.]+)/([\d.]+)", body):
                res.setdefault((who, int(c), k), []).append((float(w), float(u)))
for key in sorted(res):
    v = res[key]
    print(key, f"n={len(v)} wall median {statistics.median(x for x,_ in v):.1f} CPU median {statistics.median(y for _,y in v):.1f}")
# per round: chunk 64 against chunk 0 of the same run and round
wins = {}
for f in sys.argv[1:]:
    who = None
    for line in open(f):
        m = re.match(r"== (\w+) pass", line)
        if m: who = m.group(1); continue
        if not line.startswith("round"): continue
        d = {}
        for c, body in re.findall(r"\[chunk (\d+): ([^\]]*)\]", line):
            for k, w, u in re.findall(r"(\w+) ([\d.]+)/([\d.]+)", body):
                d[(int(c), k)] = (float(w), float(u))
        for k in ("short", "gap", "long", "lone"):
            for i, clock in ((0, "wall"), (1, "CPU")):
                t = wins.setdefault((who, k, clock), [0, 0])
                t[1] += 1
                t[0] += d[(64, k)][i] < d[(0, k)][i]
for key in sorted(wins): print("chunk 64 below chunk 0:", key, f"{wins[key][0]} of {wins[key][1]} rounds")
