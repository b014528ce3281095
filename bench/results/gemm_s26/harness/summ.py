import sys,collections,statistics as st
d=collections.defaultdict(lambda:([],[]))
rows=[l.split() for l in open(sys.argv[1])]
for b,w,c in rows: d[b][0].append(float(w)); d[b][1].append(float(c))
names=list(d)
for b in names: print(f"{b:10s} wall med {st.median(d[b][0]):.1f} [{min(d[b][0]):.1f}..{max(d[b][0]):.1f}]  cpu med {st.median(d[b][1]):.1f} [{min(d[b][1]):.1f}..{max(d[b][1]):.1f}]")
a,b=names[0],names[1]
rw=[y/x for x,y in zip(d[a][0],d[b][0])]; rc=[y/x for x,y in zip(d[a][1],d[b][1])]
print(f"{b}/{a} per-pair wall ratio med {st.median(rw):.3f} [{min(rw):.3f}..{max(rw):.3f}], cpu ratio med {st.median(rc):.3f} [{min(rc):.3f}..{max(rc):.3f}], {sum(r>1 for r in rc)}/{len(rc)} cpu pairs > 1")
