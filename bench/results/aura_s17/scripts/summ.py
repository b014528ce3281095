import json,glob,statistics as st,sys
tag=sys.argv[1]
for side in ('untuned','tuned'):
    steps=[];cpu=[];fb=[];per=[]
    for f in sorted(glob.glob(f'/tmp/aura/loop/{tag}_{side}_r*.json')):
        d=json.load(open(f)); steps+=d['step_times_s']; cpu+=d['forward_backward_cpu_s']; fb+=d['forward_backward_s']; per.append(d['median_step_s'])
    print(side, 'n',len(steps),'median step %.3f'%st.median(steps),'fwd+bwd wall %.3f'%st.median(fb),'fwd+bwd cpu %.3f'%st.median(cpu),'per-round medians',' '.join('%.3f'%x for x in per))
rs=[]
for r in range(1,20):
    try:
        a=json.load(open(f'/tmp/aura/loop/{tag}_tuned_r{r}.json'));b=json.load(open(f'/tmp/aura/loop/{tag}_untuned_r{r}.json'))
    except FileNotFoundError: break
    rs.append(a['median_step_s']/b['median_step_s'])
print('per round tuned/untuned',' '.join('%.3f'%x for x in rs))
