import json,sys,glob,statistics as st
o=sys.argv[1]
names=['moe.experts.w1w3.bwd','moe.experts.w2','moe.experts.w2.bwd','moe.experts.w1w3','lm_head.bwd','moe.shared.bwd']
pairs=sorted({int(f.split('_')[-1].split('.')[0]) for f in glob.glob(o+'/main_*.anat.json')})
def load(f):
    d=json.load(open(f)); ks={k['name']:k for k in d['kernels']}
    mm=[k for k in d['kernels'] if k['category']=='matmul']
    return ks, sum(k['flops'] for k in mm)/sum(k['total_us'] for k in mm)/1e3, sum(k['total_us'] for k in mm)
rat={n:[] for n in names+['matmul']}
for i in pairs:
    km,rm,tm=load(f'{o}/main_{i}.anat.json'); kn,rn,tn=load(f'{o}/new_{i}.anat.json')
    line=[f'{i}: matmul {rm:.1f} -> {rn:.1f} GFLOP/s']
    rat['matmul'].append(rn/rm)
    for n in names:
        a=km[n];b=kn[n]
        ra=a['flops']/a['total_us']/1e3; rb=b['flops']/b['total_us']/1e3
        rat[n].append(a['total_us']/b['total_us'])
        line.append(f'{n} {a["total_us"]/1e3:.0f}->{b["total_us"]/1e3:.0f}ms ({ra:.0f}->{rb:.0f})')
    print('; '.join(line))
for n,v in rat.items(): print(f'{n}: median time ratio main/new {st.median(v):.3f} {["%.3f"%x for x in v]}')
