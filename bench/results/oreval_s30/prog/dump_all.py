"""Every Bench4Opt reference program (the ORGEval split's 99 and the feasible split's 87) run
through the runner with PYTHON_DIR's modules; writes each one's record, model.lp, and the final
model's .mps and .lp (written again by Model.write after the run) under OUT_DIR/SPLIT/N/.
Usage: /usr/bin/python3 dump_all.py PYTHON_DIR DATA_DIR OUT_DIR"""
import io, json, os, shutil, sys
PY, DATA, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
sys.path.insert(0, PY)
import trex_eval_runner, trex_modeling
for split in ("bench4opt", "bench4opt_feasible"):
    base = os.path.join(DATA, "or-benchmarks", "bench4opt", "slai_trex", split)
    n = 0
    for line in open(os.path.join(base, "test.jsonl")):
        item = json.loads(line)
        if not item.get("reference_code"):
            continue
        folder = os.path.join(OUT, split, str(n)); n += 1
        os.makedirs(folder)
        with open(os.path.join(folder, "completion.py"), "w") as f:
            f.write(item["reference_code"])
        if item.get("data_path"):
            shutil.copy(os.path.join(base, item["data_path"]), os.path.join(folder, "data.json"))
        os.chdir(folder)
        sys.argv = ["trex_eval_runner.py", "completion.py"]
        out, sys.stdout = sys.stdout, io.StringIO()
        err, sys.stderr = sys.stderr, io.StringIO()
        try:
            st = trex_eval_runner.main(record=os.path.join(folder, "record.json"))
            m = trex_modeling.last_model()
            extra = []
            if m is not None:
                for ext in ("mps", "json", "lp"):
                    try:
                        m._write(os.path.join(folder, "final." + ext))
                    except Exception as e:
                        extra.append("%s: %s" % (ext, type(e).__name__))
        finally:
            o, e = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.stdout, sys.stderr = out, err
        with open(os.path.join(folder, "status.txt"), "w") as f:
            f.write("%s\n%s\n---stdout\n%s---stderr\n%s" % (st, extra, o, e))
    print(split, n)
