"""Where the gurobipy-compatible module's own time goes on the 99 Bench4Opt ORGEval reference
programs (issue 19), hot: every program run through the runner (trex_eval_runner.main, its record
to os.devnull) in this one process, warmed as the warm interpreter warms itself
(trex_eval_warmup), no fork and no sandbox. This is the module's cost once nothing is cold; a
warm pool's child runs the same code just after its fork, where each first touch of one of the
interpreter's pages costs more (docs/eval.md, "Throughput": bench/oreval_cpu_breakdown.py's
"program" rows are the child's figure for the same programs).

Prints the CPU per program of each of ROUNDS rounds (time.process_time, no profiler), then one
round under cProfile: each gurobipy call's and step's cumulative share of the runner's time
(cProfile adds its own cost per Python call, so the shares lean towards code with many small
calls).

Usage: python3 bench/oreval_module_profile.py DATA_DIR [--rounds 5]   (DATA_DIR: the shared data,
holding or-benchmarks/bench4opt/slai_trex/bench4opt). The programs' folders are made under
$TMPDIR (else /tmp) and removed at the end.
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import trex_eval_runner  # noqa: E402
import trex_eval_warmup  # noqa: E402

# (file, function) of cProfile's rows, in the order printed.
STEPS = [("gurobipy/__init__.py", "addVars"), ("gurobipy/__init__.py", "addVar"), ("gurobipy/__init__.py", "addConstr"),
         ("gurobipy/__init__.py", "addConstrs"), ("gurobipy/__init__.py", "setObjective"),
         ("gurobipy/__init__.py", "write"), ("trex_modeling/model.py", "_lp_text"),
         ("trex_modeling/model.py", "_to_json"), ("json/__init__.py", "dumps"), ("json/__init__.py", "load"),
         ("~", "<built-in method builtins.sum>"), ("trex_modeling/expr.py", "__mul__"),
         ("trex_modeling/expr.py", "__add__"), ("trex_modeling/expr.py", "quicksum"),
         ("~", "<built-in method builtins.compile>"), ("~", "<built-in method io.open>")]


def programs(data_dir, work):
    base = os.path.join(data_dir, "or-benchmarks", "bench4opt", "slai_trex", "bench4opt")
    folders = []
    with open(os.path.join(base, "test.jsonl")) as f:
        for line in f:
            item = json.loads(line)
            if not item.get("reference_code"):
                continue
            folder = os.path.join(work, str(len(folders)))
            os.makedirs(folder)
            with open(os.path.join(folder, "completion.py"), "w") as out:
                out.write(item["reference_code"])
            if item.get("data_path"):
                shutil.copy(os.path.join(base, item["data_path"]), os.path.join(folder, "data.json"))
            folders.append(folder)
    return folders


def run_all(folders):
    failed = 0
    for folder in folders:
        os.chdir(folder)
        sys.argv = ["trex_eval_runner.py", "completion.py"]
        stdout, sys.stdout = sys.stdout, io.StringIO()
        try:
            failed += trex_eval_runner.main(record=os.devnull) != 0
        finally:
            sys.stdout = stdout
    return failed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trex_eval_warmup.warm_up()
    trex_eval_warmup.warm_up_runner()
    work = tempfile.mkdtemp(prefix="trex-module-profile-")
    here = os.getcwd()
    try:
        folders = programs(os.path.abspath(args.data_dir), work)
        failed = run_all(folders)  # the first round warms what the warm-up did not
        rounds = []
        for _ in range(args.rounds):
            start = time.process_time()
            run_all(folders)
            rounds.append(1000 * (time.process_time() - start) / len(folders))
        print("%d programs (%d ended non-zero); CPU ms per program, hot, per round: %s" %
              (len(folders), failed, " ".join("%.2f" % r for r in rounds)))
        profile = cProfile.Profile()
        profile.enable()
        run_all(folders)
        profile.disable()
    finally:
        os.chdir(here)
        shutil.rmtree(work, ignore_errors=True)
    cumulative = {}
    for (path, _, name), row in pstats.Stats(profile).stats.items():
        key = ("/".join(path.split("/")[-2:]) if path != "~" else "~", name)
        cumulative[key] = cumulative.get(key, 0.0) + row[3]
    whole = cumulative[("python/trex_eval_runner.py", "main")]
    print("share of the runner's time (one round under cProfile):")
    for key in STEPS:
        if key in cumulative:
            print("  %-50s %5.1f%%" % ("/".join(key), 100 * cumulative[key] / whole))


if __name__ == "__main__":
    main()
