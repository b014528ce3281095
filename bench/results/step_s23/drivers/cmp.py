import json,sys,statistics as st
o=sys.argv[1]
def stats(v,r):
    L=json.load(open(f'{o}/step_{v}_{r}.log'))
    d=json.load(open(f'{o}/step_{v}_{r}.json'))
    ev=[e for e in d['traceEvents'] if e.get('ph')=='X']
    steps=[e for e in ev if e['name'].startswith('ProfilerStep')]
    sp=[e for e in ev if not e['name'].startswith('ProfilerStep')]
    gaps=[min(e['ts'] for e in sp if e['ts']>=s['ts'])-s['ts'] for s in steps]
    A=json.load(open(f'{o}/step_{v}_{r}.anat.json'))
    k={x['name']:x['total_us'] for x in A['kernels']}
    return dict(fb=L['median_forward_backward_s'], cpu=L['median_forward_backward_cpu_s'], gap=st.median(gaps)/1e3,
                route=k.get('moe.route',0)/3e3, matmul=A['category_us']['matmul']/3e3, losses=L['losses'])
rows={}
for r in (1,2,3):
    for v in ('old','new'):
        rows[(v,r)]=stats(v,r)
        x=rows[(v,r)]
        print(v,r,'fb %.3f s cpu %.3f s start-gap %.2f ms route %.2f ms/step matmul %.0f ms/step'%(x['fb'],x['cpu'],x['gap'],x['route'],x['matmul']))
for key in ('fb','cpu','gap','route','matmul'):
    rat=[rows[('old',r)][key]/rows[('new',r)][key] for r in (1,2,3)]
    print('%-6s old/new per pair: %s  median %.3f'%(key,' '.join('%.3f'%x for x in rat),st.median(rat)))
print('losses equal:', all(rows[('old',r)]['losses']==rows[('new',r)]['losses'] for r in (1,2,3)))
