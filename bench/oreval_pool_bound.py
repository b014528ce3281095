"""What a warm worker pool could gain for `trex eval` (issue 19), measured without building it.

Runs the 99 Bench4Opt ORGEval reference programs (the items of
bench4opt/slai_trex/bench4opt/test.jsonl with reference_code; trusted benchmark code) through
trex's runner (python/trex_eval_runner.py) in three ways, side by side, one program at a time:

  fresh   a fresh `/usr/bin/python3 -I -B runner completion.py` per program: what `trex eval`
          does today inside its sandbox, and what the report's harness pattern does;
  fork    one interpreter with the runner and the modelling modules imported, warmed by one
          program run in-process and its heap frozen (gc.freeze), forks one child per program,
          which runs the runner's main() in a fresh folder: the pool's design (CPU counted for
          the children alone; the warm-up is paid once per worker);
  trex    `trex eval run --bench b4o-orgeval --references --jobs 1` (sandbox, ORGEval check),
          for the whole path as shipped (BUILD/trex; skipped when absent).

`fresh` and `fork` run NO sandbox (the sandbox's own set-up is measured separately by
oreval_bench's BM_SandboxStartup); they bound what the interpreter start costs and what a
fork from a warm interpreter would cost instead. Never run this on untrusted programs.

Usage: /usr/bin/python3 bench/oreval_pool_bound.py DATA_DIR [--reps 3] [--build build]
Prints a Markdown table: medians over the repetitions of wall seconds for the 99, programs per
second, CPU milliseconds per program (children included), and the load average.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def programs(data_dir):
    split = os.path.join(data_dir, "or-benchmarks/bench4opt/slai_trex/bench4opt")
    out = []
    with open(os.path.join(split, "test.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("reference_code"):
                data = os.path.join(split, j["data_path"]) if j.get("data_path") else None
                out.append((j["id"], j["reference_code"], data))
    return out


def module_copy(into):
    """The runner and packages, byte-compiled with unchecked-hash pycs as trex carries them."""
    os.makedirs(into)
    for name in ("trex_eval_runner.py", "trex_modeling", "gurobipy", "coptpy", "trex_pulp"):
        src = os.path.join(REPO, "python", name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(into, name))
    subprocess.run(["/usr/bin/python3", "-I", "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", into],
                   check=True)
    return os.path.join(into, "trex_eval_runner.py")


def folder(root, k, code, data):
    d = os.path.join(root, "p%s" % k)
    os.mkdir(d)
    with open(os.path.join(d, "completion.py"), "w") as f:
        f.write(code)
    if data:
        shutil.copy(data, os.path.join(d, "data.json"))
    return d


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_fresh(runner, items, root):
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    codes = []
    for k, (_, code, data) in enumerate(items):
        d = folder(root, k, code, data)
        r = subprocess.run(["/usr/bin/python3", "-I", "-B", runner, "completion.py"], cwd=d, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        codes.append(r.returncode)
    return codes


def run_fork(runner, items, root):
    """Exit codes, and the CPU seconds of the forked children alone."""
    # The warm interpreter: the runner and everything it imports, loaded once, then one
    # program run in-process (what a pool would do to warm lazy imports and caches), then the
    # heap frozen so that the children's garbage collections do not touch (and copy) it.
    sys.path.insert(0, os.path.dirname(runner))
    import gc
    import trex_eval_runner
    import trex_modeling, gurobipy, coptpy  # noqa: F401,E401
    warm = folder(root, "warm", items[0][1], items[0][2])
    here, out = os.getcwd(), os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.chdir(warm)
    sys.argv = [runner, "completion.py"]
    trex_eval_runner.main()
    os.chdir(here)
    os.dup2(out, 1)
    # The warm-up's models must not become a child's "last model": exactly the kind of state a
    # real pool would have to clear (or never create) before forking.
    trex_modeling.model._last[0] = trex_modeling.model._solved[0] = None
    gc.freeze()
    codes = []
    cpu0 = children_cpu()
    for k, (_, code, data) in enumerate(items):
        d = folder(root, k, code, data)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.chdir(d)
                sys.argv = [runner, "completion.py"]
                status = trex_eval_runner.main()
            finally:
                os._exit(status or 0)
        _, st = os.waitpid(pid, 0)
        codes.append(os.waitstatus_to_exitcode(st))
    return codes, children_cpu() - cpu0


def run_trex(build, data_dir, out):
    env = dict(os.environ, TREX_DATA_DIR=data_dir)
    subprocess.run([os.path.join(build, "trex"), "eval", "run", "--bench", "b4o-orgeval", "--references", "--jobs", "1",
                    "--out", out, "--quiet"], env=env, check=True, stdout=subprocess.DEVNULL)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    a = ap.parse_args()
    items = programs(a.data_dir)
    have_trex = os.access(os.path.join(a.build, "trex"), os.X_OK)
    runs = {"fresh": [], "fork": [], "trex": []}
    codes = {}
    with tempfile.TemporaryDirectory() as tmp:
        runner = module_copy(os.path.join(tmp, "module"))
        for rep in range(a.reps):
            for name in ("fresh", "fork", "trex"):  # interleaved, so load drifts hit all three
                if name == "trex" and not have_trex:
                    continue
                root = tempfile.mkdtemp(dir=tmp)
                cpu0, t0 = children_cpu(), time.perf_counter()
                if name == "fork":
                    # In a child of its own, so the warm imports do not leak into the next repetition.
                    pid = os.fork()
                    if pid == 0:
                        c, child_cpu = run_fork(runner, items, root)
                        with open(os.path.join(root, "codes.json"), "w") as f:
                            json.dump([c, child_cpu], f)
                        os._exit(0)
                    os.waitpid(pid, 0)
                    with open(os.path.join(root, "codes.json")) as f:
                        codes[name], fork_cpu = json.load(f)
                elif name == "fresh":
                    codes[name] = run_fresh(runner, items, root)
                else:
                    run_trex(a.build, a.data_dir, os.path.join(root, "out"))
                wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
                if name == "fork":
                    cpu = fork_cpu  # the per-program children only, not the warm-up
                runs[name].append((wall, cpu, os.getloadavg()[0]))
                print("rep %d %-5s %.2f s wall, %.1f ms CPU/program, load %.1f" %
                      (rep + 1, name, wall, 1000 * cpu / len(items), os.getloadavg()[0]), file=sys.stderr)
                shutil.rmtree(root)
    if codes.get("fresh") != codes.get("fork"):
        print("exit codes differ between fresh and fork: %s" % [
            (items[i][0], x, y) for i, (x, y) in enumerate(zip(codes["fresh"], codes["fork"])) if x != y])
    n = len(items)
    print("| path | programs | wall s (median) | programs/s | CPU ms/program | load (1 min) |")
    print("|---|---:|---:|---:|---:|---|")
    for name, label in (("fresh", "fresh interpreter per program (no sandbox)"),
                        ("fork", "fork of a warm interpreter per program (no sandbox)"),
                        ("trex", "`trex eval run --references --jobs 1` (sandbox + ORGEval)")):
        if not runs[name]:
            continue
        wall = statistics.median(r[0] for r in runs[name])
        cpu = statistics.median(r[1] for r in runs[name])
        loads = ", ".join("%.1f" % r[2] for r in runs[name])
        print("| %s | %d | %.2f | %.1f | %.1f | %s |" % (label, n, wall, n / wall, 1000 * cpu / n, loads))


if __name__ == "__main__":
    main()
