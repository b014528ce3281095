"""Baseline (b): scipy.optimize.milp (HiGHS) in-process, one sample at a time.

Per sample: generate, solve with milp, render the statement, write the LP file, re-solve the
model built again from its data, compare status and objective with the first solve and with
trex's recorded answer. Usage: /usr/bin/python3 ordata_baseline_highs.py SPECS COUNT PROCESSES
"""
import math
import os
import random
import tempfile

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix

import ordata_baseline_common as common

STATUS = {0: "optimal", 2: "infeasible", 3: "unbounded"}


def solve(m):
    n = len(m["names"])
    sign = -1.0 if m["max"] else 1.0
    c = np.array(m["cost"]) * sign
    data, ri, ci, lo, hi = [], [], [], [], []
    for r, (name, l, h, terms) in enumerate(m["rows"]):
        for j, a in terms:
            ri.append(r)
            ci.append(j)
            data.append(a)
        lo.append(l)
        hi.append(h)
    cons = []
    if m["rows"]:
        A = csr_matrix((data, (ri, ci)), shape=(len(m["rows"]), n))
        cons = [LinearConstraint(A, lo, hi)]
    integrality = np.array([0 if t == "continuous" else 1 for t in m["vtype"]])
    res = milp(c, constraints=cons, bounds=Bounds(m["lower"], m["upper"]), integrality=integrality)
    status = STATUS.get(res.status, "error")
    obj = sign * res.fun if status == "optimal" else None
    return status, obj


def work(spec):
    rng = random.Random(spec["id"])
    m = common.generate(spec, rng)
    status, obj = solve(m)
    common.render(spec["story"], spec["template"], spec["concise"])
    fd, path = tempfile.mkstemp(suffix=".lp")
    with os.fdopen(fd, "w") as f:
        f.write(common.write_lp(m))
    again = common.generate(spec, rng)
    status2, obj2 = solve(again)
    os.unlink(path)
    if status != status2 or status != spec["status"]:
        return "status %s, trex %s" % (status, spec["status"])
    if status == "optimal" and not (common.agree(obj2, obj) and common.agree(obj, spec["objective"])):
        return "objective %r, trex %r" % (obj, spec["objective"])
    return "ok"


if __name__ == "__main__":
    common.main("scipy.optimize.milp (HiGHS)", work)
