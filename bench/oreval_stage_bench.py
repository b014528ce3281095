"""Where a warm-pool item's time goes (issue 19): the stages of one program in the warm
interpreter, measured one at a time on the 99 Bench4Opt ORGEval reference programs.

Each stage is the one before it plus one more step, in a warm interpreter like
python/trex_eval_zygote.py's (runner and modelling modules imported, gc frozen), with trex's
own sandbox library (every layer; fail closed):

  fork     fork the interpreter, the child exits at once (os._exit), the parent reaps it
  sandbox  + the child enters the sandbox (trex_sandbox_enter: every layer)
  program  + the runner runs the program (compile, the model built, model.write, the final
             model's record __trex_final.json), then os._exit
  finish   + the child ends as the zygote's child does (trex_eval_zygote.finish: threads
             joined, atexit handlers, garbage collected, streams flushed, os._exit)
  finalize   instead of finish, the interpreter's whole shutdown (SystemExit), as the zygote's
             child ended before session 8

The interpreter is warmed first as the zygote warms it (trex_eval_warmup's model and runner,
the request path, its code on 2 MB pages: huge_text), unless --cold. Unlike the zygote, the
children copy nothing ahead and are forked by os.fork after the request (no C loop).

The evaluator's own part per item (its temporary folder, the request, the poll loop, reading
the record back and the ORGEval comparison) is what `trex eval run` costs beyond these; the
pool benchmark (bench/oreval_pool_bench.py) measures the whole.

Usage: /usr/bin/python3 bench/oreval_stage_bench.py DATA_DIR LIBRARY [--reps 3] [--stages fork,sandbox,program,finish,finalize] [--cold]
LIBRARY is the build's libtrex_sandbox_enter.so. Prints per stage the median over repetitions
of wall ms and CPU ms per program (this process and its reaped children).
"""
import argparse
import ctypes
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


def cpu_now():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("library")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--stages", default="fork,sandbox,program,finish,finalize")
    ap.add_argument("--cold", action="store_true")
    a = ap.parse_args()
    # The module from a copy that user nobody can read, as the pool's is.
    root = tempfile.mkdtemp(prefix="trex-stage-bench-")
    os.chmod(root, 0o755)
    module = os.path.join(root, "module")
    shutil.copytree(os.path.join(REPO, "python"), module, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, module)
    import trex_eval_zygote as z  # imports the runner and the modelling modules, as the pool does

    lib = ctypes.CDLL(a.library)
    z.declare(lib)
    buf = ctypes.create_string_buffer(256)
    if lib.trex_sandbox_probe(buf, len(buf)) != 0:
        sys.exit("a sandbox layer is missing here: " + buf.value.decode())
    folder = os.path.join(a.data_dir, "or-benchmarks/bench4opt/slai_trex/bench4opt")
    with open(os.path.join(folder, "test.jsonl")) as f:
        items = [json.loads(line) for line in f]
    items = [it for it in items if it.get("reference_code")]
    devnull = os.open("/dev/null", os.O_WRONLY)
    if not a.cold:
        z.trex_eval_warmup.warm_up()
        z.trex_eval_warmup.warm_up_runner()
        z.warm_request_path()
    gc.collect()
    gc.freeze()
    if not a.cold:
        print("2 MB parts of the interpreter's code moved: %d" % z.huge_text(lib), file=sys.stderr)

    def one(stage, item):
        work = tempfile.mkdtemp(prefix="w-", dir=root)
        with open(os.path.join(work, "completion.py"), "w") as f:
            f.write(item["reference_code"])
        shutil.copyfile(os.path.join(folder, item["data_path"]), os.path.join(work, "data.json"))
        if os.geteuid() == 0:
            os.chown(work, 65534, 65534)
        request = {"workdir": work, "read_only": ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", module],
                   "limits": {"cpu_s": 60, "memory_bytes": 4 << 30, "file_bytes": 64 << 20, "open_files": 256},
                   "allow_weak": False, "env": ["PATH=/usr/bin:/bin", "HOME=" + work, "TREX_EVAL_CHANNEL_FD=3"],
                   "argv": ["/usr/bin/python3", "-I", "-B", os.path.join(module, "trex_eval_runner.py"), "completion.py"]}
        pid = os.fork()
        if pid == 0:
            if stage == "fork":
                os._exit(0)
            try:
                z.enter(lib, request, (devnull, int(os.environ.get("STAGE_ERR_FD", devnull)), devnull))
            except BaseException:
                os._exit(126)
            if stage == "sandbox":
                os._exit(0)
            os.environ.clear()
            for pair in request["env"]:
                name, _, value = pair.partition("=")
                os.environ[name] = value
            sys.argv = request["argv"][3:]
            if stage == "program":
                status = z.trex_eval_runner.main()
                sys.stdout.flush()
                os._exit(status)
            if stage == "finish":
                z.finish(z.trex_eval_runner.main())
            raise SystemExit(z.trex_eval_runner.main())
        _, status = os.waitpid(pid, 0)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if stage in ("program", "finish", "finalize") and not os.path.exists(os.path.join(work, "__trex_final.json")):
            ok = False
        shutil.rmtree(work)
        return ok

    stages = a.stages.split(",")
    runs = {s: [] for s in stages}
    for rep in range(a.reps):
        for s in stages:
            load0 = os.getloadavg()[0]
            c0, t0 = cpu_now(), time.perf_counter()
            bad = sum(not one(s, it) for it in items)
            wall, cpu = time.perf_counter() - t0, cpu_now() - c0
            runs[s].append((1000 * wall / len(items), 1000 * cpu / len(items)))
            print("rep %d %-8s %.2f ms wall, %.2f ms CPU per program, %d failed, load %.1f -> %.1f" %
                  (rep + 1, s, runs[s][-1][0], runs[s][-1][1], bad, load0, os.getloadavg()[0]), file=sys.stderr, flush=True)
    print("| stage | wall ms/program (median) | CPU ms/program (median) |")
    print("|---|---:|---:|")
    for s in stages:
        print("| %s | %.2f | %.2f |" % (s, statistics.median(r[0] for r in runs[s]), statistics.median(r[1] for r in runs[s])))
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
