#!/usr/bin/env python3
# Folds perf record -e syscalls:sys_enter_futex --call-graph dwarf samples by stack: per call, its
# first three libc frames and first three frames outside libc/libstdc++/ld.so, counted, most first.
# usage: perf script -F ip,sym,dso -i X.data | python3 futex_fold.py > X.fold
import sys, collections
# perf script output: sample header line, then stack lines "\taddr sym (dso)", blank line between samples
c=collections.Counter(); n=0; stack=[]
def flush():
    global n
    if not stack: return
    n+=1
    # first two frames outside libc/libstdc++/ld
    fr=[s for s in stack if 'libc.so' not in s[1] and 'libstdc++' not in s[1] and 'ld-linux' not in s[1] and 'libgomp' not in s[1]]
    libc=[s[0] for s in stack if 'libc.so' in s[1]][:3]
    key=(' < '.join(libc), ' < '.join(f[0][:70] for f in fr[:3]))
    c[key]+=1
for line in sys.stdin:
    line=line.rstrip('\n')
    if not line.strip():
        flush(); stack=[]; continue
    if line.startswith('\t') or line.startswith(' '):
        parts=line.strip().split(' ',1)
        if len(parts)==2:
            rest=parts[1]; i=rest.rfind(' (')
            stack.append((rest[:i], rest[i:]))
flush()
print('samples', n)
for k,v in c.most_common(25): print(v, k)
