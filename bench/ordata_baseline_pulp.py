"""Baseline (a): PuLP calling the cbc program, one sample at a time.

Per sample: generate and build the PuLP model, solve it with COIN_CMD (PuLP writes the
model, runs the `cbc` binary and reads its solution), render the statement, write the LP file,
re-solve that file with the `cbc` binary, compare status and objective with the first solve
and with trex's recorded answer. Usage: /usr/bin/python3 ordata_baseline_pulp.py SPECS COUNT PROCESSES
"""
import math
import os
import random
import re
import shutil
import subprocess
import tempfile

import pulp

import ordata_baseline_common as common

CBC = shutil.which("cbc") or "/usr/bin/cbc"
PULP_STATUS = {1: "optimal", -1: "infeasible", -2: "unbounded"}


def build(m):
    prob = pulp.LpProblem("p", pulp.LpMaximize if m["max"] else pulp.LpMinimize)
    xs = []
    for k, (n, lo, hi, t) in enumerate(zip(m["names"], m["lower"], m["upper"], m["vtype"])):
        cat = pulp.LpContinuous if t == "continuous" else pulp.LpInteger
        xs.append(pulp.LpVariable("x%d" % k, None if lo == -math.inf else lo, None if hi == math.inf else hi, cat))
    prob += pulp.lpSum(c * xs[j] for j, c in enumerate(m["cost"]) if c != 0)
    for r, (name, lo, hi, terms) in enumerate(m["rows"]):
        e = pulp.lpSum(a * xs[j] for j, a in terms)
        if lo == hi:
            prob += e == lo, "r%d" % r
        else:
            if lo != -math.inf:
                prob += e >= lo, "r%d_lo" % r
            if hi != math.inf:
                prob += e <= hi, "r%d_hi" % r
    return prob


def cbc_file(path):
    """Solves an LP file with the cbc program; returns (status, objective)."""
    sol = path + ".sol"
    subprocess.run([CBC, path, "solve", "solu", sol], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    try:
        with open(sol) as f:
            head = f.readline()
    except OSError:
        return "error", None
    finally:
        if os.path.exists(sol):
            os.unlink(sol)
    if head.startswith("Optimal"):
        return "optimal", float(re.search(r"objective value\s+(\S+)", head).group(1))
    if "nfeasible" in head:
        return "infeasible", None
    if "nbounded" in head:
        return "unbounded", None
    return "error", None


def work(spec):
    rng = random.Random(spec["id"])
    m = common.generate(spec, rng)
    prob = build(m)
    code = prob.solve(pulp.COIN_CMD(msg=False, path=CBC))
    status = PULP_STATUS.get(code, "error")
    obj = pulp.value(prob.objective) if status == "optimal" else None
    if obj is None and status == "optimal":
        obj = 0.0
    common.render(spec["story"], spec["template"], spec["concise"])
    fd, path = tempfile.mkstemp(suffix=".lp")
    with os.fdopen(fd, "w") as f:
        f.write(common.write_lp(m))
    status2, obj2 = cbc_file(path)
    os.unlink(path)
    if status != status2 and not (status == "infeasible" and status2 == "unbounded"):
        return "status:%s/%s/%s" % (status, status2, spec["status"])
    if status == "optimal" and not (common.agree(obj2, obj) and common.agree(obj, spec["objective"])):
        return "objective:%s/%s/%s" % (obj, obj2, spec["objective"])
    return "ok"


if __name__ == "__main__":
    common.main("PuLP + cbc binary", work)
