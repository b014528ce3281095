"""The time in Model._record and Model._lp_text on the 99 Bench4Opt ORGEval reference programs,
hot, in one process (session 28's A/B of b6194dc; README.md here).

Usage: /usr/bin/python3 rec_cost.py PYTHON_DIR DATA_DIR   (PYTHON_DIR: a state of python/)
Runs every program through the runner 6 times (the first round not timed) with PYTHON_DIR's
modules and prints the milliseconds a program: the whole runner, _record, _lp_text (its own
_record included)."""
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import oreval_module_profile as m  # noqa: E402  (it puts this checkout's python/ first)

if len(sys.argv) != 3:
    sys.exit("usage: rec_cost.py PYTHON_DIR DATA_DIR")
sys.path.remove(os.path.join(REPO, "bench", "..", "python"))
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import trex_eval_warmup  # noqa: E402
from trex_modeling import model as core  # noqa: E402

trex_eval_warmup.warm_up()
trex_eval_warmup.warm_up_runner()
spent = {"record": 0.0, "lp_text": 0.0}


def timed(key, method):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - start
    return wrapper


core.ModelCore._record = timed("record", core.ModelCore._record)
core.ModelCore._lp_text = timed("lp_text", core.ModelCore._lp_text)
import tempfile  # noqa: E402
import shutil  # noqa: E402

work = tempfile.mkdtemp(dir="/dev/shm")
here = os.getcwd()
try:
    folders = m.programs(os.path.abspath(sys.argv[2]), work)
    m.run_all(folders)
    for key in spent:
        spent[key] = 0.0
    start = time.perf_counter()
    for _ in range(5):
        m.run_all(folders)
    whole = time.perf_counter() - start
finally:
    os.chdir(here)
    shutil.rmtree(work, ignore_errors=True)
n = 5 * len(folders)
print("per program ms: total %.3f, _record %.3f, _lp_text (incl its _record) %.3f"
      % (whole * 1e3 / n, spent["record"] * 1e3 / n, spent["lp_text"] * 1e3 / n))
