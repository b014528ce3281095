# Runs the 99 programs with python/ at sys.argv[1]; writes each record and model.lp under sys.argv[2]
import sys, os, io, json, shutil
pydir, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, pydir)
sys.path.insert(0, '/work/wt/eval28/bench')
import oreval_module_profile as m
import trex_eval_runner
os.makedirs(out, exist_ok=True)
folders = m.programs('/work/shared/data', out)
for f in folders:
    os.chdir(f); sys.argv = ["r", "completion.py"]
    so, sys.stdout = sys.stdout, io.StringIO()
    try:
        trex_eval_runner.main(record=os.path.join(f, "record.json"))
    finally:
        sys.stdout = so
print(len(folders))
