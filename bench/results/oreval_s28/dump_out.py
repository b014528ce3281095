"""Writes each of the 99 Bench4Opt ORGEval reference programs' runner record and model.lp, run
with PYTHON_DIR's modules, under OUT_DIR/N/ (session 28: `diff -r` of two such folders showed
that b6194dc changes no byte; README.md here).

Usage: /usr/bin/python3 dump_out.py PYTHON_DIR DATA_DIR OUT_DIR"""
import io
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import oreval_module_profile as m  # noqa: E402

if len(sys.argv) != 4:
    sys.exit("usage: dump_out.py PYTHON_DIR DATA_DIR OUT_DIR")
sys.path.remove(os.path.join(REPO, "bench", "..", "python"))
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import trex_eval_runner  # noqa: E402

out = os.path.abspath(sys.argv[3])
os.makedirs(out, exist_ok=True)
for folder in m.programs(os.path.abspath(sys.argv[2]), out):
    os.chdir(folder)
    sys.argv = ["trex_eval_runner.py", "completion.py"]
    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        trex_eval_runner.main(record=os.path.join(folder, "record.json"))
    finally:
        sys.stdout = stdout
