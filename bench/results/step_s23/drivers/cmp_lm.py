# t2 summary: step medians, the lm_head.bwd spans (median per run) and the matmul category.
import json,statistics as st,sys
o=sys.argv[1]  # a folder of step_{old,new}_{1,2,3}.{log,json,anat.json}
rows={}
for r in (1,2,3):
  for v in ('old','new'):
    L=json.load(open(f'{o}/step_{v}_{r}.log')); A=json.load(open(f'{o}/step_{v}_{r}.anat.json'))
    d=json.load(open(f'{o}/step_{v}_{r}.json'))
    durs=[e['dur']/1e3 for e in d['traceEvents'] if e.get('name')=='lm_head.bwd']
    rows[(v,r)]=dict(fb=L['median_forward_backward_s'],cpu=L['median_forward_backward_cpu_s'],lb=st.median(durs),mm=A['category_us']['matmul']/3e3,losses=L['losses'])
    x=rows[(v,r)]; print(v,r,'fb %.3f s cpu %.3f s lm_head.bwd median %.1f ms matmul %.0f ms/step'%(x['fb'],x['cpu'],x['lb'],x['mm']))
for key in ('fb','cpu','lb','mm'):
  rat=[rows[('old',r)][key]/rows[('new',r)][key] for r in (1,2,3)]
  print('%-4s old/new: %s median %.3f'%(key,' '.join('%.3f'%q for q in rat),st.median(rat)))
print('losses equal', all(rows[('old',r)]['losses']==rows[('new',r)]['losses'] for r in (1,2,3)))
