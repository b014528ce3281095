#!/usr/bin/python3
"""Agreement of trex's coptpy-compatible module with COPT on ORLM's published completions.

Usage: bench/orlm_agreement.py [--jobs N] [--trex build/trex] EXECUTED.jsonl...

Each line of ORLM's results/*/executed.jsonl (Cardinal-Operations/ORLM, Apache-2.0; fetch the
repository, never copy its files here) holds `to_run_script` (the extracted program with ORLM's
closing lines appended) and COPT's recorded `execution_state` and `execution_best_solution`.
Each script runs as ORLM's eval/execute.py ran it: a fresh python3 per program, output parsed
for "Just print the best solution:" / "No Best Solution", here with trex's python/ folder on
PYTHONPATH (standalone mode: solves go to `trex solve`). Prints the agreement table and the
disagreements; --json FILE writes every item.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_one(script, trex, timeout):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "prog.py")
        with open(p, "w") as f:
            f.write(script)
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TREX_BINARY=trex)
        t0 = time.time()
        try:
            r = subprocess.run(["/usr/bin/python3", p], cwd=d, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "failed", None, "timeout", time.time() - t0
        dt = time.time() - t0
    out = r.stdout
    if r.returncode != 0:
        return "failed", None, (r.stderr.strip().splitlines() or [""])[-1][:200], dt
    k = out.find("Just print the best solution:")
    if k != -1:
        v = out[k:].replace("Just print the best solution:", "").strip().split("\n")[0]
        return "found", v, "", dt
    if "No Best Solution" in out:
        return "none", None, "", dt
    return "unexpected", None, "", dt


def recorded(state):
    if state.startswith("Execution Successful and Best"):
        return "found"
    if state.startswith("Execution Successful but No Best"):
        return "none"
    return "failed"


def close(a, b):
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def orlm_pass1(pairs):
    """Pass@1 as ORLM's eval/execute.py scores it: items grouped by question, both numbers
    rounded to integers, a relative error of at most 5% (absolute when the answer is 0), and
    "No Best Solution" matching itself."""
    by_q = {}
    for q, gt, pred in pairs:
        by_q.setdefault(q, [gt, []])[1].append(pred)
    hits = 0
    for gt, preds in by_q.values():
        ok = False
        for p in preds:
            if gt == "No Best Solution":
                ok = ok or p == gt
            elif p not in (None, "No Best Solution"):
                try:
                    g, v = round(float(gt)), round(float(p))
                except (TypeError, ValueError):
                    continue
                ok = ok or (abs(v) <= 0.05 if g == 0 else abs((v - g) / g) <= 0.05)
        hits += ok
    return 100.0 * hits / max(1, len(by_q)), len(by_q)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--trex", default=os.path.join(ROOT, "build", "trex"))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for f in a.files:
        for line in open(f):
            j = json.loads(line)
            rows.append((os.path.basename(os.path.dirname(f)) or f, j))
    t0 = time.time()
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda r: run_one(r[1]["to_run_script"], a.trex, a.timeout), rows))
    wall = time.time() - t0
    table = {}
    items = []
    for (bench, j), (state, value, why, dt) in zip(rows, results):
        rec = recorded(j["execution_state"])
        agree = state == rec and (rec != "found" or close(value, j["execution_best_solution"]))
        t = table.setdefault(bench, {"n": 0, "copt_found": 0, "found_agree": 0, "none": 0, "none_agree": 0,
                                     "failed": 0, "failed_agree": 0, "trex_correct": 0, "copt_correct": 0})
        t["n"] += 1
        t["copt_" + ("found" if rec == "found" else "x")] = t.get("copt_" + ("found" if rec == "found" else "x"), 0) + (rec == "found")
        if rec == "found":
            t["found_agree"] += agree
        elif rec == "none":
            t["none"] += 1
            t["none_agree"] += agree
        else:
            t["failed"] += 1
            t["failed_agree"] += state == "failed"
        ans = j.get("en_answer")
        items.append({"bench": bench, "copt": rec, "copt_value": j.get("execution_best_solution"), "trex": state,
                      "trex_value": value, "why": why, "seconds": round(dt, 3), "agree": bool(agree),
                      "answer": ans})
    print("| benchmark | items | COPT best found | trex agrees | COPT no best | trex agrees | COPT failed | trex fails too | Pass@1 trex (ORLM comparator) | Pass@1 COPT record |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b, t in table.items():
        mine = [(j["en_question"], j["en_answer"], i["trex_value"] if i["trex"] == "found" else
                 "No Best Solution" if i["trex"] == "none" else None)
                for (bb, j), i in zip(rows, items) if bb == b]
        theirs = [(j["en_question"], j["en_answer"], j["execution_best_solution"]) for bb, j in rows if bb == b]
        (p_trex, nq), (p_copt, _) = orlm_pass1(mine), orlm_pass1(theirs)
        print("| %s | %d (%d questions) | %d | %d | %d | %d | %d | %d | %.1f%% | %.1f%% |" % (
            b, t["n"], nq, t["copt_found"], t["found_agree"], t["none"], t["none_agree"], t["failed"], t["failed_agree"],
            p_trex, p_copt))
    secs = sorted(i["seconds"] for i in items)
    print("programs %d, wall %.1f s with %d jobs, median %.3f s per program" % (len(items), wall, a.jobs, secs[len(secs) // 2]))
    for i in items:
        if not i["agree"] and i["copt"] != "failed":
            print("disagree %s: COPT %s %s, trex %s %s %s" % (i["bench"], i["copt"], i["copt_value"], i["trex"], i["trex_value"], i["why"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(items, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
