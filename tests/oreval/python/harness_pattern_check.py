"""The report's ORGEval harness pattern with trex's gurobipy module: each Bench4Opt reference
program (the items with reference_code of bench4opt/slai_trex/bench4opt/test.jsonl, the ORGEval
split, and of bench4opt_feasible/test.jsonl with --feasible) runs in a fresh interpreter and
writes model.lp; gurobipy.read reads it and the reference LP (Gurobi
wrote those) back, and the two are compared as the harness does: single-variable rows turned
into bounds, then the counts of variables and rows and the multisets of variable features
(objective coefficient, type, bounds) and row features (right-hand side, sense, coefficients).
The written file is also compared with the reference text after white-space normalisation,
exactly and with numbers allowed to differ in their last digit: a file that is not identical
must be in TEXT_KNOWN (with the reason) and one listed there must still differ. Every number of
every reference LP must come out of the module's number writer as Gurobi wrote it.

Usage: harness_pattern_check.py DATA_DIR [--every N] [--jobs N] [--feasible]
Prints one line per item that differs and a summary; exits 1 when an item differs in
structure or text and is not in KNOWN or TEXT_KNOWN (each with its reason), or a listed item
now agrees.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile

import gurobipy as gp

# id -> why the program's model is not the reference LP's (the same three items that
# tests/oreval/references_test.cc lists for `trex eval`).
KNOWN = {
    "BENCH4OPT_32": "lp_data/data_32 has 3 assets, the reference LP 10: data and LP come from different instances",
    "BENCH4OPT_144": "the program leaves X at its default lower bound 0; the reference LP declares X free",
    "BENCH4OPT_380": "the reference program builds 6 variables and 7 rows, the reference LP 7 and 7",
    # the feasible split (--feasible), as tests/oreval/references_test.cc lists it for `trex eval`
    "feasible:BENCH4OPT_380": "the program builds another model (optimum 0.1445) than the one whose optimum (30) is given",
}


# id -> why the written file is not Gurobi's reference text after white-space normalisation
# although the structure agrees (the KNOWN items differ in text too and are not listed here).
TEXT_KNOWN = {
    # The program sums two costs in Python (80.3 + 3.99 style) and passes the double on; Gurobi's
    # file has the decimal. Gurobi got that same double only if the LP came from this data, so
    # either its writer shortens some doubles or the data differed (as for 164 and 312 below).
    "BENCH4OPT_200": "three numbers one ulp apart in their last digit (84.28999999999999 against the "
                     "reference's 84.29); cause not established (Gurobi's writer or other data)",
    # Data a few ulps from the reference LP's: the data file holds 4.640000000000001 and
    # 8.309999999999999, which the program passes on as they are; the reference LP has 4.64 and
    # 8.31, so it was written from data that differed in the last digits.
    "feasible:BENCH4OPT_164": "data.json holds 4.640000000000001 (and 2 more such), the reference LP 4.64: other data",
    "feasible:BENCH4OPT_312": "data.json holds 8.309999999999999 (and 2 more such), the reference LP 8.31: other data",
    # The program states a variable on both sides ((w / h) * x[i] >= r * x[i] with w / h = 1,
    # r = 0.32): Python's double subtraction is exact (0.6799999999999999); the reference has 0.68.
    # Whether Gurobi merged otherwise or the LP came from other data (as above) is not established.
    "feasible:BENCH4OPT_92": "merged coefficients 1 - 0.32 = 0.6799999999999999 against the reference's 0.68 (4 such)",
}


def features(path):
    m = gp.read(path)
    # The harness's first step: a row with one variable becomes a bound of that variable.
    for c in list(m.getConstrs()):
        row = m.getRow(c)
        if row.size() == 1 and abs(row.getCoeff(0)) > 1e-10:
            v, a = row.getVar(0), row.getCoeff(0)
            b = c.RHS / a
            sense = c.Sense if a > 0 else {"<": ">", ">": "<", "=": "="}[c.Sense]
            if sense in ("<", "="):
                v.UB = min(v.UB, b)
            if sense in (">", "="):
                v.LB = max(v.LB, b)
            m.remove(c)
    m.update()

    def r(x):
        return float("%.9g" % x)

    vars_ = sorted((r(v.Obj), v.VType, r(v.LB), r(v.UB)) for v in m.getVars())
    rows = sorted((r(c.RHS), c.Sense, tuple(sorted(r(m.getRow(c).getCoeff(i)) for i in range(m.getRow(c).size()))))
                  for c in m.getConstrs())
    return m.NumVars, m.NumConstrs, m.ModelSense, vars_, rows


def same_up_to_last_digit(a, b):
    """Token for token equal, numbers allowed to differ in their last printed digit (where
    Gurobi's double is an ulp from the one Python computed)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if abs(fx - fy) > 4e-16 * max(abs(fx), abs(fy)):
            return False
    return True


def numbers_not_reproduced(items, folder):
    """Every number of every reference LP (Gurobi wrote them), written back from the double its
    text denotes by the module's writer: the ones that come out different."""
    from trex_modeling.lp_writer import gurobi_number
    total, wrong = 0, []
    for path in sorted({it["reference_lp_path"] for it in items if it.get("reference_lp_path")}):
        with open(os.path.join(folder, path)) as f:
            for tok in f.read().split():
                if tok.lstrip("+-") in ("infinity", "inf", "nan"):
                    continue
                try:
                    x = float(tok)
                except ValueError:
                    continue
                total += 1
                if gurobi_number(x) != tok:
                    wrong.append((path, tok, gurobi_number(x)))
    return total, wrong


def run_item(item, folder, python_dir, key):
    with tempfile.TemporaryDirectory() as d:
        code = item["reference_code"].replace("data.json", os.path.join(folder, item["data_path"]))
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(code)
        env = dict(os.environ, PYTHONPATH=python_dir)
        env.pop("TREX_EVAL_CHANNEL_FD", None)
        p = subprocess.run(["/usr/bin/python3", "prog.py"], cwd=d, env=env, capture_output=True, text=True, timeout=300)
        lp = os.path.join(d, "model.lp")
        if p.returncode != 0 or not os.path.exists(lp):
            return key, "no-lp", (p.stderr.strip().splitlines() or ["?"])[-1], 0
        ref = os.path.join(folder, item["reference_lp_path"])
        with open(lp) as f, open(ref) as g:
            mine, theirs = f.read().split(), g.read().split()
        same_text = 2 if mine == theirs else 1 if same_up_to_last_digit(mine, theirs) else 0
        a, b = features(lp), features(ref)
        if a == b:
            return key, "same", "", same_text
        what = ["variable count", "row count", "sense", "variable features", "row features"]
        return key, "different", next(w for w, x, y in zip(what, a, b) if x != y), same_text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--feasible", action="store_true", help="the feasible split's reference programs and LPs")
    a = ap.parse_args()
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(gp.__file__)))
    folder = os.path.join(a.data_dir, "or-benchmarks/bench4opt/slai_trex", "bench4opt_feasible" if a.feasible else "bench4opt")
    prefix = "feasible:" if a.feasible else ""
    with open(os.path.join(folder, "test.jsonl")) as f:
        items = [json.loads(line) for line in f]
    total, wrong = numbers_not_reproduced(items, folder)
    print("numbers in the reference LPs %d, written differently by lp_writer %d %s" % (total, len(wrong), wrong[:5]))
    items = [it for it in items if it.get("reference_code")]
    listed = set(KNOWN) | set(TEXT_KNOWN)
    items = [it for n, it in enumerate(items) if n % a.every == 0 or prefix + it["id"] in listed]
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda it: run_item(it, folder, python_dir, prefix + it["id"]), items))
    bad = 0
    for id_, verdict, why, same_text in results:
        if (verdict == "same") == (id_ in KNOWN):
            bad += 1
            print("UNEXPECTED %s: %s %s%s" % (id_, verdict, why, " (known: %s)" % KNOWN[id_] if id_ in KNOWN else ""))
        elif verdict != "same":
            print("known %s: %s (%s)" % (id_, why, KNOWN[id_]))
        elif (same_text == 2) == (id_ in TEXT_KNOWN):
            bad += 1
            print("UNEXPECTED %s: the written text %s%s" % (id_, "is Gurobi's" if same_text == 2 else "differs from Gurobi's",
                                                        " (listed: %s)" % TEXT_KNOWN[id_] if id_ in TEXT_KNOWN else ""))
        elif same_text != 2:
            print("text %s: %s (%s)" % (id_, "last digits" if same_text else "differs", TEXT_KNOWN[id_]))
    same = sum(1 for r in results if r[1] == "same")
    text = sum(1 for r in results if r[3] == 2)
    digit = sum(1 for r in results if r[3] >= 1)
    print("programs %d, structure as the reference %d, text identical after white-space normalisation %d, "
          "identical but for the last digit of some numbers %d" % (len(results), same, text, digit))
    return 1 if bad or wrong or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
