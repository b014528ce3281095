import sys, os, gc, time, tempfile, shutil, io
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, '/work/wt/eval28/bench')
import oreval_module_profile as m
sys.path.remove(os.path.join('/work/wt/eval28/bench', '..', 'python')) if os.path.join('/work/wt/eval28/bench', '..', 'python') in sys.path else None
sys.path.insert(0, sys.argv[1])
import trex_eval_runner, trex_eval_warmup
from trex_modeling import model as core
from trex_modeling import lp_writer
trex_eval_warmup.warm_up(); trex_eval_warmup.warm_up_runner()
work = tempfile.mkdtemp(dir='/dev/shm'); here=os.getcwd()
folders = m.programs('/work/shared/data', work)
T={'record':0.0,'lp_text':0.0,'todump':0.0}
orig_record = core.ModelCore._record
def rec(self, stated=False):
    t=time.perf_counter(); r=orig_record(self, stated); T['record']+=time.perf_counter()-t; return r
core.ModelCore._record = rec
orig_lp = core.ModelCore._lp_text
def lpt(self):
    t=time.perf_counter(); r=orig_lp(self); T['lp_text']+=time.perf_counter()-t; return r
core.ModelCore._lp_text = lpt
for rnd in range(6):
    if rnd==1:
        for k in T: T[k]=0.0
        t0=time.perf_counter()
    m.run_all(folders)
tt=time.perf_counter()-t0
os.chdir(here); shutil.rmtree(work)
n=5*len(folders)
print("per program ms: total %.3f, _record %.3f, _lp_text (incl its _record) %.3f" % (tt*1e3/n, T['record']*1e3/n, T['lp_text']*1e3/n))
