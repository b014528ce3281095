"""Hot, one process: CPU per program of the runner's stages on the 99 programs (process_time wrappers)."""
import os, sys, time, tempfile, shutil, json, builtins
PY = os.path.abspath(sys.argv[1]); DATA = sys.argv[2]
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import oreval_module_profile as m
sys.path.remove(os.path.join(REPO, "bench", "..", "python"))
sys.path.insert(0, PY)
import trex_eval_warmup, trex_eval_runner
trex_eval_warmup.warm_up(); trex_eval_warmup.warm_up_runner()
from trex_modeling import model as core, lp_writer
spent = {}
clock = time.process_time
def timed(key, f):
    def w(*a, **k):
        t = clock()
        try: return f(*a, **k)
        finally: spent[key] = spent.get(key, 0.0) + clock() - t
    return w
core.ModelCore._add_constr = timed("_add_constr", core.ModelCore._add_constr)
core.ModelCore._new_vars = timed("_new_vars", core.ModelCore._new_vars)
core.ModelCore._set_objective = timed("_set_objective", core.ModelCore._set_objective)
core.ModelCore._write = timed("_write", core.ModelCore._write)
core.ModelCore._lp_text = timed("_lp_text", core.ModelCore._lp_text)
core.ModelCore._record = timed("_record", core.ModelCore._record)
lp_writer.lp_text = timed("lp_text", lp_writer.lp_text)
json.dumps = timed("json.dumps", json.dumps)
builtins.compile = timed("compile", builtins.compile)
json.load = timed("json.load", json.load)
work = tempfile.mkdtemp(dir="/dev/shm"); here = os.getcwd()
try:
    folders = m.programs(DATA, work); m.run_all(folders); spent.clear()
    t = clock()
    R = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    for _ in range(R): m.run_all(folders)
    whole = clock() - t
finally:
    os.chdir(here); shutil.rmtree(work, ignore_errors=True)
n = R * len(folders)
print("whole %.3f ms/program" % (whole * 1e3 / n))
for k, v in sorted(spent.items(), key=lambda kv: -kv[1]): print("  %-16s %.3f" % (k, v * 1e3 / n))
