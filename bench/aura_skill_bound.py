#!/usr/bin/python3
# An upper bound on what skills from other shapes can save, from aura_search_bench's measured
# tables (--save-tables): for each space, its configurations are measured best first in the
# order of the OTHER shapes' de-noised relative times (each other shape's whole table, median of
# its passes, over its best; mapped into the target by a transfer per parameter: absolute, or a
# ratio to one shape quantity as target.cc's SpaceParam::scales), geometric mean over shapes.
# The count, per (space, seed s), is the evaluations until a configuration within 3% of the
# held-out best (median of the passes other than s) is measured, as the bench's --loo scores the
# searches. The transfer is chosen per space IN HINDSIGHT (the combination that counts fewest):
# no real search can do better from these skills, so a kernel whose bound is not half the cold
# search's evaluations (the bench's "cold evals (sum)") cannot be halved by skills of this kind.
# Usage: /usr/bin/python3 bench/aura_skill_bound.py bench/results/aura_search_s5_1t.tsv
import sys, math, itertools, statistics as st
from collections import defaultdict
path=sys.argv[1]
T=defaultdict(dict)  # (kernel,shape)->{cfg: passes}
for line in open(path):
    if line.startswith('#') or not line.strip(): continue
    f=line.split()
    k,sh,cfg,ok=f[0],f[1],f[2],f[3]
    ps=[float(x) for x in f[5:]]
    if ok!='1': continue
    T[(k,sh)][cfg]=ps
def parse(c): return dict((a,int(b)) for a,b in (x.split('=') for x in c.split(';')))
def dims(sh): return [int(x) for x in sh.split('x')]
def scales(k,d,p):
    if k=='gemm': return {'kc':[d[2]],'mc':[d[0]],'nc':[d[1]]}.get(p,[])
    if p=='block_elems':
        if k=='rope.fwd': return [d[1]*d[2], d[0]*d[1]*d[2]]
        return [d[1], d[0]*d[1]]
    if p=='vocab_tile': return [d[1]]
    if p in ('query_block','block_tokens'): return [d[0]]
    if p=='column_block': return [d[1]*d[2]]
    if p=='channel_block': return [d[1]]
    return []
def med(v):
    v=sorted(v); n=len(v); return v[n//2] if n%2 else (v[n//2-1]+v[n//2])/2
res=defaultdict(lambda:[0,0])
kernels=sorted(set(k for k,_ in T))
for k in kernels:
    spaces=[s for kk,s in T if kk==k]
    params=list(parse(next(iter(T[(k,spaces[0])]))).keys())
    for tsh in spaces:
        tgt=T[(k,tsh)]; td=dims(tsh)
        tvals={p:sorted(set(parse(c)[p] for c in tgt)) for p in params}
        npass=len(next(iter(tgt.values())))
        # transfer modes per param: -1 abs, i scale
        modes=[[-1]+list(range(len(scales(k,td,p)))) for p in params]
        best_total=None; per_mode={}
        for combo in itertools.product(*modes):
            # predicted score per target config
            score=defaultdict(list)
            for ssh in spaces:
                if ssh==tsh: continue
                src=T[(k,ssh)]; sd=dims(ssh)
                den={c:med(v) for c,v in src.items()}
                b=min(den.values())
                best_at={}
                for c,t in den.items():
                    pc=parse(c); m=[]
                    for p,mode in zip(params,combo):
                        v=pc[p]
                        if v<=0 or mode<0 or not scales(k,sd,p):
                            w=v if mode<0 or v<=0 else v
                        else:
                            w=v*scales(k,td,p)[mode]/scales(k,sd,p)[mode]
                        cand=tvals[p]
                        if w<=0: m.append(min(cand,key=lambda x:abs(x-w)))
                        else: m.append(min([x for x in cand if x>0] or cand,key=lambda x:abs(math.log2(x)-math.log2(w))))
                    key=tuple(m)
                    best_at[key]=min(best_at.get(key,9),t/b)
                for key,r in best_at.items(): score[key].append(math.log(r))
            order=sorted(tgt, key=lambda c:(st.mean(score[tuple(parse(c)[p] for p in params)]) if score.get(tuple(parse(c)[p] for p in params)) else 9, c))
            tot=0
            for s in range(npass):
                ho={c:med([x for i,x in enumerate(v) if i!=s]) for c,v in tgt.items()}
                b=min(ho.values())
                for i,c in enumerate(order):
                    if ho[c]<=1.03*b: tot+=i+1; break
            per_mode[combo]=tot
        bm=min(per_mode,key=per_mode.get)
        print(k,tsh,len(tgt),'best-first by other shapes (best transfer)',per_mode[bm],bm,'worst',max(per_mode.values()))
        res[k][0]+=per_mode[bm]; res[k][1]+=npass
for k,(a,n) in res.items(): print('SUM',k,a,'over',n,'(space,seed) pairs')
