import json,sys,glob,statistics,collections,re,os
# usage: summ.py DIR prefix  -> per (kernel,dtype,shape) medians of seconds for each side
d=sys.argv[1]; pre=sys.argv[2] if len(sys.argv)>2 else 'kvmhc'
t=collections.defaultdict(lambda: collections.defaultdict(list)); tri=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(f'{d}/{pre}_*.log')):
    side=re.sub(r'\.log$','',f).split('_')[-1]
    for line in open(f):
        if line.startswith('json '):
            j=json.loads(line[5:]); k=(j['kernel'],j['dtype'],j['shape'])
            t[k][side].append(j['seconds']*1e3); tri[k][side].append(j['of_triad'])
sides=sorted({s for k in t for s in t[k]})
print('| kernel | dtype | shape | '+' | '.join(f'{s} ms (runs)' for s in sides)+' | old/new | of triad '+'/'.join(sides)+' |')
for k in t:
    ms={s:statistics.median(t[k][s]) for s in sides if t[k][s]}
    r=ms.get('old',0)/ms['lead'] if 'lead' in ms and 'old' in ms else float('nan')
    print(f'| {k[0]} | {k[1]} | {k[2]} | '+' | '.join(f"{ms[s]:.3f} ({' '.join(f'{x:.2f}' for x in t[k][s])})" for s in sides)+f' | {r:.3f}x | '+'/'.join(f'{statistics.median(tri[k][s])*100:.0f}%' for s in sides)+' |')
