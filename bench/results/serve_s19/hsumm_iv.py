import re,sys,collections,statistics as st
d=collections.defaultdict(list)
for f in sys.argv[1:]:
    who=None; tok=64
    for line in open(f):
        m=re.match(r'== (\w+) pass',line)
        if m: who=m.group(1); tok=64; continue
        if line.startswith('-- 256'): tok=256; continue
        m=re.match(r'(\w+) client, (\d) client\(s\): first token median ([\d.]+) ms.*median (\d+) over.*client (\d+) us, server (\d+) us',line)
        if m: d[(tok,m.group(1),int(m.group(2)),who)].append((float(m.group(3)),int(m.group(4)),int(m.group(5)),int(m.group(6))))
        m=re.match(r'goals \((\w+) client\): 8 clients ([\d.]+)x',line)
        if m: d[(tok,m.group(1),'ratio',who)].append(float(m.group(2)))
for tok in (64,256):
  for cl in ('urllib','raw'):
    r=[st.median(d[(tok,cl,'ratio',w)]) for w in ('iv4','iv8')]
    print(f"{tok} tokens, {cl}: 8/1 ratio median of passes iv4 {r[0]:.2f} iv8 {r[1]:.2f}  (passes {d[(tok,cl,'ratio','iv4')]} / {d[(tok,cl,'ratio','iv8')]})")
    for k in (1,8):
      s=[]
      for w in ('iv4','iv8'):
        v=d[(tok,cl,k,w)]
        s.append(f"{w}: first {st.median([x[0] for x in v]):5.1f} ms, {st.median([x[1] for x in v]):5.0f} tok/s, server {st.median([x[3] for x in v]):4.0f} us/tok (n{len(v)})")
      print(f"   {k} client(s): "+" | ".join(s))
