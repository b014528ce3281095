"""Dual values (Pi) and reduced costs (RC) of a solved LP.

trex's cbc back end (and so "auto", the default) returns them with the solution of an LP
solved to optimality (lp::SolveResult::duals; solve.py reads them from either path); then
model._result["duals"] holds them and they are returned as they are. Where the back end gave
none (a run with --solver sbb or glpk), the module finds them itself when a program first
reads one: a second LP over the row duals y, from the optimality conditions at
the solution the first solve returned (complementary slackness). A row that is not tight gets
y = 0; a tight row's y has the sign Gurobi's reference manual gives ("Pi": >= 0 for a >= row,
<= 0 for a <= row, free for =, the senses reversed for a maximisation); each column's reduced
cost c - A'y is 0 where the variable lies strictly between its bounds, of the sign that makes
the solution optimal where it sits on one. Any y meeting these is a dual optimum; where the LP
is degenerate there are several, and this one need not be the basis Gurobi would report.

The second LP is one more solve (one more request over `trex eval`'s channel), made once per
solution and only when Pi or RC is read. A model with integer variables, quadratic terms or
general constraints has no such duals here: Gurobi gives none for a MIP ("Unable to retrieve
attribute"), and trex does not compute them for quadratic models.
"""

from . import solve as _solve_mod
from .errors import AttrError, ModelingError, UnsupportedCall
from .expr import INF


def _tight(a, b):
    return abs(a - b) <= 1e-7 * max(1.0, abs(b))


def duals(model, attr):
    """(pi: {row _index: value}, rc: {variable _index: value}) of the model's solution, made
    once per solution."""
    r = model._result
    if r is None or r.get("x") is None or r.get("status") != "optimal":
        raise AttrError(10005, "Unable to retrieve attribute '%s'" % attr)
    if "duals" in r:
        return r["duals"]
    rec = model._to_json()
    if any(v[3] != "C" for v in rec["vars"]):
        raise AttrError(10005, "Unable to retrieve attribute '%s'" % attr)  # a MIP: Gurobi has none
    if rec["qobj"] or any(c[5] for c in rec["constrs"]):
        raise UnsupportedCall(10003, "attribute '%s' of a quadratic model is not computed by trex" % attr)
    act_vars = model._active_vars()
    x = [r["x"][v._index] for v in act_vars]
    sign = -1.0 if rec["sense"] == "max" else 1.0  # the minimised form: cost sign * c
    cols = [[] for _ in x]                        # per column: (row, coefficient)
    yvars = []
    for i, (name, sense, rhs, idx, coef, _) in enumerate(rec["constrs"]):
        act = sum(a * x[j] for j, a in zip(idx, coef))
        for j, a in zip(idx, coef):
            cols[j].append((i, a))
        if sense != "=" and not _tight(act, rhs):
            lb = ub = 0.0
        else:  # the minimised form's dual: >= rows y >= 0, <= rows y <= 0, = rows free
            lb = 0.0 if sense == ">" else -INF
            ub = 0.0 if sense == "<" else INF
        yvars.append(["y%d" % i, lb, ub, "C", 0.0])
    rows = []
    for j, (name, lb, ub, _, c) in enumerate(rec["vars"]):
        if lb == ub:
            continue  # a fixed column: its reduced cost may have either sign
        at_lb, at_ub = lb > -INF and _tight(x[j], lb), ub < INF and _tight(x[j], ub)
        sense = "=" if not (at_lb or at_ub) else "<" if at_lb else ">"  # A'y (sense) sign * c
        rows.append(["d%d" % j, sense, sign * c, [i for i, _ in cols[j]], [a for _, a in cols[j]], []])
    dual = {"name": "duals", "sense": "min", "constant": 0.0, "vars": yvars, "constrs": rows, "qobj": []}
    if yvars:
        got = _solve_mod.solve(model, dual, None)
        if got.get("status") != "optimal" or got.get("x") is None:
            raise ModelingError(10005, "trex could not compute the duals of this LP (%s)" % got.get("status"))
        y = [sign * v for v in got["x"][:len(yvars)]]  # Gurobi's Pi: d objective / d rhs
    else:
        y = []
    rows_live = model._active_constrs()
    pi = {c._index: y[i] + 0.0 for i, c in enumerate(rows_live)}
    rc = {}
    for j, v in enumerate(act_vars):
        rc[v._index] = rec["vars"][j][4] - sum(a * y[i] for i, a in cols[j]) + 0.0
    r["duals"] = (pi, rc)
    return r["duals"]
