"""In a forked child of a warmed interpreter: the runner's whole path run twice on the same program (fresh folder state); CPU of each pass."""
import gc, json, os, resource, shutil, sys, tempfile, time
py = sys.argv[1]; split = sys.argv[2]
sys.path.insert(0, py)
import trex_eval_zygote as z
from trex_modeling import model as core
z.trex_eval_warmup.warm_up(); z.trex_eval_warmup.warm_up_runner(); gc.collect(); gc.freeze()
folder = "/work/shared/data/or-benchmarks/bench4opt/slai_trex/" + split
items = [json.loads(l) for l in open(folder + "/test.jsonl")]
items = [it for it in items if it.get("reference_code")]
root = tempfile.mkdtemp()
def ru():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime, r.ru_stime, r.ru_minflt
tot = [[0.0, 0.0, 0] for _ in range(3)]
for it in items:
    d = os.path.join(root, str(it["id"])); os.mkdir(d)
    shutil.copyfile(os.path.join(folder, it["data_path"]), os.path.join(d, "data.json"))
    with open(os.path.join(d, "completion.py"), "w") as f: f.write(it["reference_code"])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.chdir(d); sys.argv = ["runner", "completion.py"]
        out = []
        for k in range(3):
            a = ru(); z.trex_eval_runner.main(); b = ru()
            out.append([b[i] - a[i] for i in range(3)])
        os.write(w, json.dumps(out).encode()); os._exit(0)
    os.close(w); out = json.loads(os.read(r, 10000)); os.close(r); os.waitpid(pid, 0)
    for k in range(3):
        for i in range(3): tot[k][i] += out[k][i]
n = len(items)
for k in range(3): print("pass %d: user %.3f ms sys %.3f ms faults %.1f" % (k + 1, 1000 * tot[k][0] / n, 1000 * tot[k][1] / n, tot[k][2] / n))
shutil.rmtree(root)
