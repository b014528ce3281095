import re,sys,collections,statistics
d=collections.defaultdict(list)
lim=None
for f in sys.argv[1:]:
    for line in open(f):
        m=re.match(r'== limit (\d+)',line)
        if m: lim=int(m.group(1)); continue
        m=re.match(r'prompt\s+(\d+), (\d+) at once: ([\d.]+) ms CPU, ([\d.]+) ms wall',line)
        if m: d[(int(m.group(1)),int(m.group(2)),lim)].append((float(m.group(3)),float(m.group(4))))
prompts=sorted({k[0] for k in d}); cl=sorted({k[1] for k in d})
for c in cl:
  print(f"{c} at once: CPU ms per prompt, median of passes (n)   [wall]")
  for p in prompts:
    row=[]
    for l in (16,32,64):
      v=d[(p,c,l)]
      row.append(f"{l}: {statistics.median([x[0] for x in v]):6.2f} [{statistics.median([x[1] for x in v]):5.2f}] (n{len(v)})")
    b=statistics.median([x[0] for x in d[(p,c,16)]])
    print(f"  prompt {p:3d}  "+"  ".join(row)+f"   32/16 {statistics.median([x[0] for x in d[(p,c,32)]])/b:.2f} 64/16 {statistics.median([x[0] for x in d[(p,c,64)]])/b:.2f}")
