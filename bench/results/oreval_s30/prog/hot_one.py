"""One process: the 99 programs through the runner, hot (warmed as the zygote warms), ROUNDS timed
rounds; prints CPU ms per program (process_time) and the stage figures. Usage: hot_one.py PYDIR DATA ROUNDS"""
import os, sys, time, tempfile, shutil
PY = os.path.abspath(sys.argv[1]); DATA = sys.argv[2]; R = int(sys.argv[3])
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import oreval_module_profile as m
sys.path.remove(os.path.join(REPO, "bench", "..", "python"))
sys.path.insert(0, PY)
import trex_eval_warmup
trex_eval_warmup.warm_up(); trex_eval_warmup.warm_up_runner()
work = tempfile.mkdtemp(dir="/dev/shm"); here = os.getcwd()
try:
    folders = m.programs(DATA, work); m.run_all(folders)
    t = time.process_time()
    for _ in range(R): m.run_all(folders)
    print("%.4f" % ((time.process_time() - t) * 1e3 / R / len(folders)))
finally:
    os.chdir(here); shutil.rmtree(work, ignore_errors=True)
