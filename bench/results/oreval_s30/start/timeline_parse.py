import re, sys, statistics
# segments from perf trace output: python execve, marks 5001..5017, ready sendto, evaluator events
def parse(path):
    ev = []
    for line in open(path):
        m = re.match(r'\s*([\d.]+) \(\s*([\d.]*)\s*(?:ms)?\): (\S+)/(\d+) (.*)', line)
        if not m: continue
        t = float(m.group(1)); comm = m.group(3); rest = m.group(5)
        ev.append((t, comm, int(m.group(4)), rest))
    out = {}
    pyexec = None
    for t, comm, pid, rest in ev:
        if comm == 'python3' and rest.startswith('execve') and pyexec is None:
            pyexec = t; out['spawn'] = t; pypid = pid
        m = re.match(r'close\(fd: (50\d\d)\)', rest)
        if m and 'mark%s' % m.group(1) not in out: out['mark' + m.group(1)] = t
        if comm == 'python3' and rest.startswith('unshare(unshare_flags: 131072)') and 'attach' not in out: out['attach'] = t
        if rest.startswith('sendto') and 'len: 6,' in rest and 'copied' not in out: out['copied'] = t
        if rest.startswith('sendto') and 'ready' not in out and 'len: 6,' not in rest and comm=='python3': out['ready'] = t
        if rest.startswith('exit_group') and comm.startswith('trex'): out['end'] = t
    return out
rows = [parse(p) for p in sys.argv[1:]]
keys = sorted(set().union(*rows), key=lambda k: statistics.median([r[k] for r in rows if k in r]))
prev = None
for k in keys:
    vals = [r[k] for r in rows if k in r]
    med = statistics.median(vals)
    d = [r[k] - r[prev] for r in rows if k in r and prev in r] if prev else []
    print("%-10s at %7.2f ms  (+%5.2f ms median step, n=%d)" % (k, med, statistics.median(d) if d else 0, len(vals)))
    prev = k
