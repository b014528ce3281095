#!/usr/bin/env python3
# threadcpu.py PID OUT: snapshot of every thread's utime+stime (ticks) of PID, as JSON {tid: [comm, ticks, nvcsw, nivcsw]}
import json, os, sys
pid = sys.argv[1]; out = {}
for t in os.listdir(f"/proc/{pid}/task"):
    try:
        s = open(f"/proc/{pid}/task/{t}/stat").read(); comm = s[s.index("(")+1:s.rindex(")")]
        f = s.rsplit(")", 1)[1].split()
        st = dict(l.split(":\t") for l in open(f"/proc/{pid}/task/{t}/status").read().splitlines() if ":\t" in l)
        ns = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        out[t] = [comm, ns, int(st["voluntary_ctxt_switches"]), int(st["nonvoluntary_ctxt_switches"])]
    except FileNotFoundError: pass
json.dump(out, open(sys.argv[2], "w"))
