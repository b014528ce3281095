# goals_diff.py DIR_A DIR_B (replay_all.sh outputs): per space, goals (a)/(b) from the --loo goal tables of two replays.
import sys,os,re
def load(d):
    out={}
    for f in sorted(os.listdir(d)):
        if not f.endswith('.log'): continue
        k=f[:-4]; g=False
        for l in open(os.path.join(d,f)):
            if l.startswith('Goals (a) and (b)'): g=True; continue
            if g and l.startswith('| ') and not l.startswith('| kernel') and not l.startswith('|---'):
                c=[x.strip() for x in l.strip().strip('|').split('|')]
                if len(c)<8: continue
                found=c[6]; ret=c[7]
                fn,fd=map(int,found.split('/'))
                out[(k,c[0],c[1])]=(float(c[3]),float(c[4]),fn==fd,c)
            elif g and not l.startswith('|') and l.strip() and not l.startswith('Goals'): g=False
    return out
A=load(sys.argv[1]); B=load(sys.argv[2])
keys=sorted(set(A)|set(B))
nb_a=sum(1 for k in A if A[k][1]<=1.10); nb_b=sum(1 for k in B if B[k][1]<=1.10)
na_a=sum(1 for k in A if A[k][2]); na_b=sum(1 for k in B if B[k][2])
print('spaces',len(A),len(B),' (b) start<=1.10:',nb_a,'->',nb_b,'  (a) found every seed:',na_a,'->',na_b)
import math
ga=[math.log(A[k][1]) for k in keys if k in A and k in B]; gb=[math.log(B[k][1]) for k in keys if k in A and k in B]
print('geomean start/best: %.4f -> %.4f'%(math.exp(sum(ga)/len(ga)),math.exp(sum(gb)/len(gb))))
for k in keys:
    if k not in A or k not in B: print('missing',k); continue
    a,b=A[k],B[k]
    if abs(a[1]-b[1])>1e-9 or a[2]!=b[2]:
        print('%-8s %-14s %-12s start %.3f -> %.3f   found-all %s -> %s   (%s -> %s)'%(k[0],k[1],k[2],a[1],b[1],a[2],b[2],a[3][6],b[3][6]))
