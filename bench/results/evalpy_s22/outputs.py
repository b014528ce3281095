"""Writes, for every reference program of both splits, the LP text and the record JSON with the python/ folder given; prints a hash per program."""
import hashlib, json, os, shutil, sys, tempfile
sys.path.insert(0, sys.argv[1])
import gurobipy
from trex_modeling import model as core
out = {}
for split in ("bench4opt", "bench4opt_feasible"):
    folder = "/work/shared/data/or-benchmarks/bench4opt/slai_trex/" + split
    items = [json.loads(l) for l in open(folder + "/test.jsonl")]
    for it in items:
        if not it.get("reference_code"): continue
        d = tempfile.mkdtemp(); shutil.copyfile(os.path.join(folder, it["data_path"]), os.path.join(d, "data.json")); os.chdir(d)
        ns = {"__name__": "__main__"}; exec(compile(it["reference_code"], "completion.py", "exec"), ns)
        m = ns.get("model") or core.last_model()
        lp = open("model.lp").read(); rec = json.dumps(m._to_json(), allow_nan=False)
        mps = m._lp_text()
        out[split + ":" + str(it["id"])] = hashlib.sha256((lp + "\0" + rec + "\0" + mps).encode()).hexdigest()
        shutil.rmtree(d)
json.dump(out, open(sys.argv[2], "w"), indent=0, sort_keys=True)
print(len(out))
