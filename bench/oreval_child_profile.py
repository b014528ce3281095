"""Where a warm child's own work goes, stage by stage (issue 19): the program's Python, the
modelling module's calls, Model.write's LP text, the runner's record, on the Bench4Opt reference
programs (the 99 of the ORGEval split, or the 87 of the feasible split with --feasible).

A process warmed as python/trex_eval_zygote.py warms itself (runner and modules imported,
trex_eval_warmup's model and runner, gc collected and frozen) forks one child per program, as
the pool does, with no sandbox (its layers are kernel work, measured by
bench/oreval_stage_bench.py). The child runs the runner's steps itself, in the runner's order,
and reads its own user and system CPU time (getrusage) and page faults between them:

  read+compile  the program's file read and compiled (trex_eval_runner.main's first lines)
  program       exec of the program, less the two stages inside it below
  write         Model.write (.lp: the record, lp_writer's text, the file)
  solve         the solve requests of the program (optimize()): the record, the channel, the
                reply; outside trex eval the trex binary (TREX_BINARY), so only with --solve
  record        the runner's final record: _to_json, json.dumps, __trex_final.json

With --profile each child also runs under cProfile; the parent merges the children's profiles
and prints the functions with the most own time, grouped by file (the profiler's overhead
inflates call-heavy code: read it for the order, not the milliseconds).

Usage: python3 bench/oreval_child_profile.py DATA_DIR [--feasible] [--reps 3] [--profile N]
       [--python DIR] [--solve]
Timed: run it in the quiet lane (flock /work/notes/quiet.lock nice -n 0 ...).
"""
import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("read+compile", "program", "write", "solve", "record")


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime, r.ru_stime, r.ru_minflt, time.perf_counter())


def child(z, item, folder, work, out_fd, profile_path):
    """In the forked child: the runner's steps, timed; writes one JSON line to out_fd."""
    import trex_modeling
    from trex_modeling import model as core
    from trex_modeling import solve as solve_mod

    os.chdir(work)
    marks = {s: [0.0, 0.0, 0, 0.0] for s in STAGES}
    inner = []  # stack of nested stage starts inside exec

    def timed(stage, fn):
        def wrapper(*a, **k):
            u0 = usage()
            inner.append(stage)
            try:
                return fn(*a, **k)
            finally:
                inner.pop()
                u1 = usage()
                for i in range(4):
                    marks[stage][i] += u1[i] - u0[i]
        return wrapper

    core.ModelCore._write = timed("write", core.ModelCore._write)
    solve_mod.solve = timed("solve", solve_mod.solve)
    prof = None
    if profile_path:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    u0 = usage()
    with open("completion.py", encoding="utf-8", errors="replace") as f:
        source = f.read()
    code = compile(source, "completion.py", "exec")
    u1 = usage()
    namespace = {"__name__": "__main__", "__file__": "completion.py"}
    status = 0
    try:
        exec(code, namespace)
    except BaseException as e:
        status = "%s: %s" % (type(e).__name__, e)
    u2 = usage()
    model, _ = z.trex_eval_runner.final_model(namespace, trex_modeling, None)
    if model is not None:
        data = model._to_json()
        data["from"] = "variable model"
        text = json.dumps(data, allow_nan=False)
        with open("__trex_final.json", "w") as f:
            f.write(text)
    u3 = usage()
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile_path)
    for i in range(4):
        marks["read+compile"][i] = u1[i] - u0[i]
        marks["program"][i] = (u2[i] - u1[i]) - marks["write"][i] - marks["solve"][i]
        marks["record"][i] = u3[i] - u2[i]
    os.write(out_fd, (json.dumps({"id": item["id"], "status": status, "model": model is not None,
                                  "marks": marks}) + "\n").encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--feasible", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, help="print the N functions with the most own time")
    ap.add_argument("--python", default=os.path.join(REPO, "python"), help="the python/ folder to measure")
    ap.add_argument("--solve", action="store_true", help="let optimize() run trex solve (TREX_BINARY)")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="trex-child-profile-")
    module = os.path.join(root, "module")
    shutil.copytree(a.python, module, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, module)
    import trex_eval_zygote as z  # the runner and the modelling modules, imported as the pool does

    split = "bench4opt_feasible" if a.feasible else "bench4opt"
    folder = os.path.join(a.data_dir, "or-benchmarks/bench4opt/slai_trex", split)
    with open(os.path.join(folder, "test.jsonl")) as f:
        items = [json.loads(line) for line in f]
    items = [it for it in items if it.get("reference_code")]
    z.trex_eval_warmup.warm_up()
    z.trex_eval_warmup.warm_up_runner()
    gc.collect()
    gc.freeze()
    if not a.solve:
        os.environ.pop("TREX_EVAL_CHANNEL_FD", None)
        os.environ["TREX_BINARY"] = "/bin/false"  # a solve fails at once, counted in its stage
    per_rep = []
    profiles = []
    for rep in range(a.reps):
        totals = {s: [0.0, 0.0, 0, 0.0] for s in STAGES}
        load0 = os.getloadavg()[0]
        failed = 0
        for n, item in enumerate(items):
            work = tempfile.mkdtemp(prefix="w-", dir=root)
            with open(os.path.join(work, "completion.py"), "w") as f:
                f.write(item["reference_code"])
            shutil.copyfile(os.path.join(folder, item["data_path"]), os.path.join(work, "data.json"))
            r, w = os.pipe()
            prof_path = os.path.join(root, "prof-%d-%d" % (rep, n)) if a.profile and rep == 0 else None
            pid = os.fork()
            if pid == 0:
                os.close(r)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                try:
                    child(z, item, folder, work, w, prof_path)
                finally:
                    os._exit(0)
            os.close(w)
            with os.fdopen(r) as f:
                line = f.read()
            os.waitpid(pid, 0)
            shutil.rmtree(work)
            if not line:
                failed += 1
                continue
            j = json.loads(line)
            if j["status"] != 0 or not j["model"]:
                failed += 1
            for s in STAGES:
                for i in range(4):
                    totals[s][i] += j["marks"][s][i]
            if prof_path:
                profiles.append(prof_path)
        per_rep.append(totals)
        print("rep %d: %s; %d failed or built no model; load %.1f -> %.1f" % (
            rep + 1, ", ".join("%s %.2f+%.2f ms" % (s, 1000 * totals[s][0] / len(items), 1000 * totals[s][1] / len(items))
                               for s in STAGES), failed, load0, os.getloadavg()[0]), file=sys.stderr, flush=True)
    n = len(items)
    print("%d programs (%s), medians of %d repetitions, per program:" % (n, split, a.reps))
    print("| stage | user ms | sys ms | page faults | wall ms |")
    print("|---|---:|---:|---:|---:|")
    for s in STAGES:
        med = [statistics.median(t[s][i] for t in per_rep) for i in range(4)]
        print("| %s | %.3f | %.3f | %.1f | %.3f |" % (s, 1000 * med[0] / n, 1000 * med[1] / n, med[2] / n, 1000 * med[3] / n))
    tot = [statistics.median(sum(t[s][i] for s in STAGES) for t in per_rep) for i in range(4)]
    print("| all | %.3f | %.3f | %.1f | %.3f |" % (1000 * tot[0] / n, 1000 * tot[1] / n, tot[2] / n, 1000 * tot[3] / n))
    if profiles:
        import pstats
        st = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            st.add(p)
        by_file = {}
        for (fn, line, name), (cc, nc, tt, ct, callers) in st.stats.items():
            key = os.path.basename(fn) if fn.startswith(module) else fn if fn.startswith("~") or fn == "completion.py" else "stdlib:" + os.path.basename(fn)
            by_file[key] = by_file.get(key, 0.0) + tt
        print("\nOwn time by file under cProfile (ms per program):")
        for k, v in sorted(by_file.items(), key=lambda kv: -kv[1])[:20]:
            print("  %8.3f  %s" % (1000 * v / n, k))
        print("\nFunctions by own time under cProfile:")
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:a.profile]
        for (fn, line, name), (cc, nc, tt, ct, callers) in rows:
            print("  %8.3f ms own %8.3f cum %8d calls  %s:%d %s" % (1000 * tt / n, 1000 * ct / n, nc,
                                                                     os.path.basename(fn), line, name))
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
