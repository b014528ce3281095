import json,sys,glob,statistics as st,os
o=sys.argv[1]
pairs=sorted({int(f.split('_')[-1].split('.')[0]) for f in glob.glob(o+'/main_*.json')})
rs=[];rc=[]
for i in pairs:
    try:
        m=json.load(open(f'{o}/main_{i}.json')); n=json.load(open(f'{o}/new_{i}.json'))
    except Exception as e: continue
    assert m['losses']==n['losses'], (i, m['losses'], n['losses'])
    r=m['median_step_s']/n['median_step_s']; c=m['median_forward_backward_cpu_s']/n['median_forward_backward_cpu_s']
    rs.append(r); rc.append(c)
    print(i, 'step main %.3f new %.3f ratio %.3f | fb cpu main %.3f new %.3f ratio %.3f'%(m['median_step_s'],n['median_step_s'],r,m['median_forward_backward_cpu_s'],n['median_forward_backward_cpu_s'],c))
print('pairs',len(rs),'median step ratio main/new %.3f (%d/%d >1), cpu ratio %.3f (%d/%d >1)'%(st.median(rs),sum(x>1 for x in rs),len(rs),st.median(rc),sum(x>1 for x in rc),len(rc)))
