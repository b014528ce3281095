import json,sys,glob,statistics,collections,re
# usage: summ2.py DIR prefix [probe_GBps]: per (kernel,dtype,shape) and side: median ms, median paired of-triad,
# and bytes / median time against a fixed probe triad (default 51.6 GB/s, the near-idle probe of this VM)
d=sys.argv[1]; pre=sys.argv[2]; P=float(sys.argv[3]) if len(sys.argv)>3 else 51.6
t=collections.defaultdict(lambda: collections.defaultdict(list)); tri=collections.defaultdict(lambda: collections.defaultdict(list)); by={}
for f in sorted(glob.glob(f'{d}/{pre}_*.log')):
    side=re.sub(r'\.log$','',f).split('_')[-1]
    for line in open(f):
        if line.startswith('json '):
            j=json.loads(line[5:]); k=(j['kernel'],j['dtype'],j['shape'])
            t[k][side].append(j['seconds']*1e3); tri[k][side].append(j['of_triad']); by[k]=j['bytes']
sides=sorted({s for k in t for s in t[k]})
print('| kernel | dtype | shape | '+' | '.join(f'{s} ms median (runs) / paired of-triad / of {P} GB/s' for s in sides)+(' | old/lead |' if 'old' in sides and 'lead' in sides else ' |'))
for k in t:
    cells=[]; ms={}
    for s in sides:
        if not t[k][s]: cells.append('-'); continue
        m=statistics.median(t[k][s]); ms[s]=m
        cells.append(f"{m:.3f} ({' '.join(f'{x:.2f}' for x in t[k][s])}) / {statistics.median(tri[k][s])*100:.0f}% / {by[k]/(m*1e-3)/(P*1e9)*100:.0f}%")
    r=f" {ms['old']/ms['lead']:.3f}x |" if 'old' in ms and 'lead' in ms else ''
    print(f'| {k[0]} | {k[1]} | {k[2]} | '+' | '.join(cells)+' |'+r)
