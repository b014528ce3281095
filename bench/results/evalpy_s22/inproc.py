"""In-process steady-state timing of each stage over the reference programs (no fork, no faults): min of R runs."""
import json, os, shutil, sys, tempfile, time
py = sys.argv[1]; split = sys.argv[2]; R = int(sys.argv[3])
sys.path.insert(0, py)
import trex_eval_runner, trex_modeling, gurobipy
from trex_modeling import model as core
folder = "/work/shared/data/or-benchmarks/bench4opt/slai_trex/" + split
items = [json.loads(l) for l in open(folder + "/test.jsonl")]
items = [it for it in items if it.get("reference_code")]
root = tempfile.mkdtemp(dir="/dev/shm")
tot = {"compile": 0.0, "exec": 0.0, "write": 0.0, "record": 0.0}
orig_write = core.ModelCore._write
acc = [0.0]
def w(self, fn):
    t = time.perf_counter(); orig_write(self, fn); acc[0] += time.perf_counter() - t
core.ModelCore._write = w
pc = time.perf_counter
for it in items:
    d = os.path.join(root, str(it["id"])); os.mkdir(d)
    shutil.copyfile(os.path.join(folder, it["data_path"]), os.path.join(d, "data.json"))
    os.chdir(d)
    src = it["reference_code"]
    best = {k: 1e9 for k in tot}
    for r in range(R):
        t0 = pc(); code = compile(src, "completion.py", "exec"); t1 = pc()
        ns = {"__name__": "__main__"}; acc[0] = 0.0
        exec(code, ns); t2 = pc()
        m = ns.get("model") or core.last_model()
        data = m._to_json(); data["from"] = "x"; text = json.dumps(data, allow_nan=False)
        with open("__trex_final.json", "w") as f: f.write(text)
        t3 = pc()
        best["compile"] = min(best["compile"], t1 - t0); best["exec"] = min(best["exec"], t2 - t1 - acc[0])
        best["write"] = min(best["write"], acc[0]); best["record"] = min(best["record"], t3 - t2)
    for k in tot: tot[k] += best[k]
n = len(items)
print(split, " ".join("%s %.3f ms" % (k, 1000 * v / n) for k, v in tot.items()), "sum %.3f ms" % (1000 * sum(tot.values()) / n))
shutil.rmtree(root)
