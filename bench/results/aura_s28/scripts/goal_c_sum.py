# goal_c_sum.py DIR [DIR2]: goal (c) per replay dir from the --loo logs: per space, the half-budget
# found counts (guided by searches vs cold) and the evaluations to 3% (cold, guided by searches,
# guided by tables; medians over seeds), summed; spaces counted where the half budget is >= 2.
import sys,os
def parse(d):
    res={}
    for f in sorted(os.listdir(d)):
        if not f.endswith('.log'): continue
        k=f[:-4]; mode=None
        for l in open(os.path.join(d,f)):
            if l.startswith('Goal (c), half'): mode='c'; continue
            if l.startswith('| kernel | shape | space | de-noised best'): mode='e'; continue
            if not l.startswith('|'):
                if l.strip(): mode=None if mode and not l.startswith('|') and l[0]!=' ' else mode
                continue
            if l.startswith('|---') or l.startswith('| kernel'): continue
            c=[x.strip() for x in l.strip().strip('|').split('|')]
            key=(k,c[0],c[1])
            if mode=='c' and len(c)>=10:
                b15,bh=[int(x.strip().split()[0]) for x in c[3].split(',')[:2]]
                res.setdefault(key,{}).update(half=bh, g_half=c[5], c_half=c[7])
            elif mode=='e' and len(c)>=10:
                try:
                    res.setdefault(key,{}).update(cold=float(c[7]), gs=float(c[8].split(',')[0]), gt=float(c[9].split(',')[0]))
                except ValueError: pass
    return res
def every(x):
    a,b=x.split('/'); return a==b
for d in sys.argv[1:]:
    r=parse(d)
    groups={}
    for key,v in r.items():
        g='s27' if key[0].endswith('_s27') else ('s28' if key[0].endswith('_s28') else 'older')
        G=groups.setdefault(g,dict(n=0,counted=0,gh=0,ch=0,cold=0,gs=0,gt=0,room=0,cold_r=0,gs_r=0,gt_r=0))
        G['n']+=1
        if 'cold' in v:
            G['cold']+=v['cold']; G['gs']+=v['gs']; G['gt']+=v['gt']
            if v['cold']>1: G['room']+=1; G['cold_r']+=v['cold']; G['gs_r']+=v['gs']; G['gt_r']+=v['gt']
        if v.get('half',0)>=2:
            G['counted']+=1; G['gh']+=every(v['g_half']); G['ch']+=every(v['c_half'])
    print(d)
    for g,G in sorted(groups.items()):
        print('  %-6s spaces %d; evals to 3%% (sum of medians) cold %.1f, guided by searches %.1f (%.2f), by tables %.1f (%.2f); with room (cold>1) %d: %.1f, %.1f (%.2f), %.1f (%.2f); half budget >= 2: %d spaces, found on every seed guided %d, cold %d'%(
            g,G['n'],G['cold'],G['gs'],G['gs']/max(G['cold'],1e-9),G['gt'],G['gt']/max(G['cold'],1e-9),G['room'],G['cold_r'],G['gs_r'],G['gs_r']/max(G['cold_r'],1e-9),G['gt_r'],G['gt_r']/max(G['cold_r'],1e-9),G['counted'],G['gh'],G['ch']))
