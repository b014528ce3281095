"""Which mappings a program's first pass in a forked child writes: Private_Dirty growth per mapping (smaps before/after), summed over the programs."""
import gc, json, os, shutil, sys, tempfile, collections
py = sys.argv[1]; split = sys.argv[2]
sys.path.insert(0, py)
import trex_eval_zygote as z
z.trex_eval_warmup.warm_up(); z.trex_eval_warmup.warm_up_runner(); gc.collect(); gc.freeze()
folder = "/work/shared/data/or-benchmarks/bench4opt/slai_trex/" + split
items = [json.loads(l) for l in open(folder + "/test.jsonl")]
items = [it for it in items if it.get("reference_code")]
root = tempfile.mkdtemp(dir="/dev/shm")
def smaps():
    out = {}; key = None
    with open("/proc/self/smaps") as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and len(p) >= 5 and not p[0].endswith(":"):
                rng = p[0]; name = p[5] if len(p) > 5 else "[anon]"
                key = (rng, os.path.basename(name), p[1]); out[key] = [0, 0]
            elif p[0] == "Private_Dirty:": out[key][0] = int(p[1])
            elif p[0] == "Rss:": out[key][1] = int(p[1])
    return out
tot = collections.Counter(); rss = collections.Counter()
for it in items:
    d = os.path.join(root, str(it["id"])); os.mkdir(d)
    shutil.copyfile(os.path.join(folder, it["data_path"]), os.path.join(d, "data.json"))
    with open(os.path.join(d, "completion.py"), "w") as f: f.write(it["reference_code"])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.chdir(d); sys.argv = ["runner", "completion.py"]
        a = smaps(); z.trex_eval_runner.main(); b = smaps()
        res = collections.Counter(); rs = collections.Counter()
        for k, v in b.items():
            label = "%s %s" % (k[1], k[2])
            res[label] += v[0] - a.get(k, [0, 0])[0]; rs[label] += v[1] - a.get(k, [0, 0])[1]
        os.write(w, json.dumps([res, rs]).encode()); os._exit(0)
    os.close(w); data = b""
    while True:
        c = os.read(r, 1 << 16)
        if not c: break
        data += c
    os.close(r); os.waitpid(pid, 0)
    a_, b_ = json.loads(data); tot.update(a_); rss.update(b_)
n = len(items)
for k, v in tot.most_common(25): print("%8.1f kB dirtied %8.1f kB rss  %s" % (v / n, rss[k] / n, k))
print("total dirtied %.1f kB/program" % (sum(tot.values()) / n))
shutil.rmtree(root)
