"""compile_in_place with a warm per-user cache, two versions of python/trex_eval_pyc.py
alternating in one process (A B B A ...): CPU (process_time) per module copy compiled, N rounds.
Each version gets its own cache folder, filled once first; each round copies PYTHON_DIR's
module files (as module_copy_list below) into a fresh folder and compiles it.

Usage: /usr/bin/python3 digest_ab.py PYTHON_DIR A_PYC_FILE B_PYC_FILE [ROUNDS]   (default 30)
"""
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time

NAMES = ("trex_eval_runner.py", "trex_eval_zygote.py", "trex_eval_warmup.py", "trex_eval_pyc.py", "trex_modeling",
         "gurobipy", "coptpy", "trex_pulp")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy(python, into):
    os.mkdir(into)
    for name in NAMES:
        source = os.path.join(python, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(into, name), ignore=shutil.ignore_patterns("__pycache__"))
        elif os.path.exists(source):
            shutil.copy(source, into)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    python, a_file, b_file = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    tmp = tempfile.mkdtemp(prefix="trex-digest-ab-")
    try:
        sides = {}
        for side, path in (("A", a_file), ("B", b_file)):
            module = load(path, "pyc_" + side)
            cache_dir = os.path.join(tmp, "cache_" + side)
            os.mkdir(cache_dir, 0o700)
            fd = module.open_pyc_cache(cache_dir)
            assert fd is not None
            folder = os.path.join(tmp, "fill_" + side)
            copy(python, folder)
            module.compile_in_place(folder, fd)
            sides[side] = (module, fd)
        got = {"A": [], "B": []}
        n = 0
        for i in range(rounds):
            for side in ("AB" if i % 2 == 0 else "BA"):
                module, fd = sides[side]
                n += 1
                folder = os.path.join(tmp, "copy%d" % n)
                copy(python, folder)
                c0 = time.process_time()
                module.compile_in_place(folder, fd)
                got[side].append(time.process_time() - c0)
                shutil.rmtree(folder)
        a, b = got["A"], got["B"]
        print("compile_in_place with a warm cache, CPU ms: A median %.2f (range %.2f-%.2f), B median %.2f "
              "(range %.2f-%.2f), A lower in %d of %d" %
              (1e3 * statistics.median(a), 1e3 * min(a), 1e3 * max(a), 1e3 * statistics.median(b), 1e3 * min(b),
               1e3 * max(b), sum(x < y for x, y in zip(a, b)), rounds))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
