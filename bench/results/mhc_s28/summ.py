#!/usr/bin/env python3
# Medians per (kernel, dtype) of kernel_triad_bench json lines: summ.py DIR -> base and new
# ms and of_triad (each run's paired median), and the ratio of the medians.
import glob, json, statistics, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for side in ("base", "new"):
    for f in sorted(glob.glob(f"{d}/{side}_*.txt")):
        for line in open(f):
            if line.startswith("json "):
                j = json.loads(line[5:])
                rows[(j["kernel"], j["dtype"])][side].append((j["seconds"] * 1e3, j["of_triad"]))
for k, v in rows.items():
    b, n = v["base"], v["new"]
    if not b or not n: continue
    mb = statistics.median(x[0] for x in b); mn = statistics.median(x[0] for x in n)
    print(f"{k[0]} {k[1]}: base {mb:.3f} ms ({', '.join(f'{x[1]*100:.0f}%' for x in b)}) "
          f"new {mn:.3f} ms ({', '.join(f'{x[1]*100:.0f}%' for x in n)}); base/new {mb/mn:.3f}")
