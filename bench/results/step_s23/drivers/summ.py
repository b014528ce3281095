import collections,statistics,sys
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    v,rest=l.split(' ',1); shape,g=rest.rsplit(':',1); d[shape][v].append(float(g.split()[0]))
for s,x in d.items():
    r=[n/o for n,o in zip(x['new'],x['old'])]
    print('%-32s old %6.1f new %6.1f GFLOP/s  new/old median %.3f  (%d/%d higher)'%(s,statistics.median(x['old']),statistics.median(x['new']),statistics.median(r),sum(q>1 for q in r),len(r)))
