"""In a child forked from a process warmed as the zygote warms itself: page faults (minflt) of steps."""
import os, sys, gc, json, resource
PY = os.path.abspath(sys.argv[1]); DATA = sys.argv[2]
sys.path.insert(0, PY)
import trex_eval_zygote as z
z.trex_eval_warmup.warm_up(); z.trex_eval_warmup.warm_up_runner(); z.warm_request_path()
gc.collect(); gc.freeze()
base = os.path.join(DATA, "or-benchmarks/bench4opt/slai_trex/bench4opt")
items = [json.loads(l) for l in open(os.path.join(base, "test.jsonl"))]
items = [i for i in items if i.get("reference_code")]
def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
import time
res = {}
for it in items[:40]:
    src = it["reference_code"]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = []
        f0 = flt(); t0 = time.process_time()
        c = compile(src, "completion.py", "exec")
        f1 = flt(); t1 = time.process_time()
        c2 = compile(src, "completion2.py", "exec")
        f2 = flt(); t2 = time.process_time()
        names = ["zz_new_name_%d" % i for i in range(60)]
        f3 = flt()
        for n in names: sys.intern(n)
        f4 = flt()
        objs = [[i, float(i)] for i in range(500)]
        f5 = flt()
        os.write(w, json.dumps([f1 - f0, (t1 - t0) * 1e3, f2 - f1, (t2 - t1) * 1e3, f4 - f3, f5 - f4]).encode())
        os._exit(0)
    os.close(w); data = os.read(r, 1000); os.close(r); os.waitpid(pid, 0)
    for k, v in zip(("compile flt", "compile ms", "compile2 flt", "compile2 ms", "intern60 flt", "alloc500 flt"), json.loads(data)):
        res.setdefault(k, []).append(v)
import statistics
for k, v in res.items(): print("%-14s median %.3f mean %.3f" % (k, statistics.median(v), statistics.mean(v)))
