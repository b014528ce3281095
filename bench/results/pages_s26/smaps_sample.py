#!/usr/bin/env python3
"""Runs a command, samples its /proc/PID/smaps every 0.1 s, and prints (for the sample with the
most anonymous memory, and the max over samples) how much anonymous memory is on huge pages, how
much sits in large (>= 2 MiB) mappings with / without the hg flag, and the largest non-huge ones."""
import subprocess, sys, time

def sample(pid):
    vmas = []
    try:
        with open(f"/proc/{pid}/smaps") as f:
            cur = None
            for line in f:
                head = line.split()
                if not head: continue
                if '-' in head[0] and not head[0].endswith(':'):
                    lo, hi = (int(x, 16) for x in head[0].split('-'))
                    cur = {"lo": lo, "hi": hi, "name": " ".join(head[5:]), "anon": 0, "huge": 0, "flags": ""}
                    vmas.append(cur)
                elif head[0] == "Anonymous:": cur["anon"] = int(head[1])
                elif head[0] == "AnonHugePages:": cur["huge"] = int(head[1])
                elif head[0] == "VmFlags:": cur["flags"] = " ".join(head[1:])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return vmas

def summarize(vmas):
    anon = sum(v["anon"] for v in vmas)
    huge = sum(v["huge"] for v in vmas)
    big = [v for v in vmas if v["hi"] - v["lo"] >= (2 << 20)]
    hg = sum(v["anon"] for v in big if " hg" in " " + v["flags"])
    hg_huge = sum(v["huge"] for v in big if " hg" in " " + v["flags"])
    nohg = sorted((v for v in big if " hg" not in " " + v["flags"] and v["anon"] > 0), key=lambda v: -v["anon"])
    return anon, huge, hg, hg_huge, nohg

cmd = sys.argv[1:]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
best = None
maxhuge = 0
while p.poll() is None:
    v = sample(p.pid)
    if v:
        s = summarize(v)
        maxhuge = max(maxhuge, s[1])
        if best is None or s[0] > best[0]: best = s
    time.sleep(0.1)
out = p.stdout.read()
print(out[-3000:])
if best:
    anon, huge, hg, hg_huge, nohg = best
    print(f"peak sample: anon {anon/1024:.1f} MiB, AnonHugePages {huge/1024:.1f} MiB ({100*huge/max(anon,1):.0f}%);"
          f" in hg mappings >=2MiB: {hg/1024:.1f} MiB anon of which {hg_huge/1024:.1f} MiB huge;"
          f" non-hg mappings >=2MiB with anon: {sum(v['anon'] for v in nohg)/1024:.1f} MiB in {len(nohg)}; max huge over samples {maxhuge/1024:.1f} MiB")
    for v in nohg[:8]:
        print(f"  non-hg {v['anon']/1024:.1f} MiB anon, size {(v['hi']-v['lo'])/2**20:.1f} MiB {v['name']} [{v['flags']}]")
