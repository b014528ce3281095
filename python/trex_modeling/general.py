"""General constraints (MAX, MIN, ABS, AND, OR, indicator) and SOS constraints.

A model keeps them as the program stated them (model.py: _gen, _sos); Model.write puts them in
the LP sections Gurobi's LP format describes, and the record trex solves and scores holds their
linear MIP formulation instead, since trex's solvers take only linear and quadratic rows. That
formulation is the textbook one Gurobi's reference manual points to ("General Constraints":
"techniques for translating these constraints into lower-level modeling objects (typically
using auxiliary binary variables and linear or SOS constraints) are well known"): one binary
per choice and big-M rows whose M comes from the variables' bounds. Where a bound it needs is
infinite, trex cannot state the constraint and says so (UnsupportedCall) instead of solving a
different model. Imported only by programs that use these constraints.
"""

import numbers

from .errors import ModelingError, UnsupportedCall
from .expr import INF, LinExpr, TempConstr, Var, _num

# Gurobi's GRB.GENCONSTR_* codes for the kinds trex states.
KIND_CODES = {"MAX": 0, "MIN": 1, "ABS": 2, "AND": 3, "OR": 4, "INDICATOR": 6}


class GenExpr:
    """What max_(), min_(), abs_(), and_() and or_() return: only `var == genexpr` (either
    side) makes a constraint of it, as in gurobipy."""
    __array_ufunc__ = None
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, kind, args, constant=None):
        self._kind, self._args, self._constant = kind, args, constant

    def __eq__(self, other):
        return GenTempConstr(other, self)

    def __repr__(self):
        return "<gurobi.GenExpr%s>" % self._kind.capitalize()


def _vars_of(args, what):
    out = []
    for a in args:
        if isinstance(a, Var):
            out.append(a)
        elif isinstance(a, dict):
            out.extend(_vars_of(list(a.values()), what))
        elif isinstance(a, (list, tuple)) or hasattr(a, "__iter__") and not isinstance(a, (str, LinExpr)):
            out.extend(_vars_of(list(a), what))
        else:
            raise ModelingError(10003, "%s takes variables, not %r" % (what, a))
    return out


def gen_max_min(kind, args, constant):
    """max_/min_(*args, constant=None): variables, lists of them, and numbers (folded into the
    constant, as gurobipy does)."""
    nums = [_num(a) for a in args if isinstance(a, numbers.Number)]
    vs = _vars_of([a for a in args if not isinstance(a, numbers.Number)], kind.lower() + "_")
    if constant is not None:
        nums.append(_num(constant))
    c = None if not nums else (max(nums) if kind == "MAX" else min(nums))
    return GenExpr(kind, vs, c)


def gen_abs(arg):
    if not isinstance(arg, Var):
        raise ModelingError(10003, "abs_ takes one variable (gurobipy's abs_ accepts a Var only)")
    return GenExpr("ABS", [arg])


def gen_logic(kind, args):
    return GenExpr(kind, _vars_of(args, kind.lower() + "_"))


class GenTempConstr(TempConstr):
    """`var == max_(...)`, or an indicator `(b == 1) >> (x + y <= 3)`: Model.addConstr and
    addConstrs hand it to add_to."""

    def __init__(self, lhs, gen, indicator=None):
        TempConstr.__init__(self, lhs, "=", gen)
        self._indicator = indicator

    def add_to(self, model, name):
        if self._indicator is not None:
            binvar, binval, tc = self._indicator
            return model._add_indicator(binvar, binval, tc._lhs, tc._sense, tc._rhs, name)
        res = single_var(self._lhs, "the left-hand side of a general constraint")
        g = self._rhs
        return model._add_general(g._kind, res, g._args, g._constant, name)


def single_var(x, what):
    """x as one variable: a Var, or a LinExpr that is exactly one variable with coefficient 1."""
    if isinstance(x, Var):
        return x
    if isinstance(x, LinExpr) and type(x) is LinExpr and x.size() == 1 and x.getCoeff(0) == 1 and x.getConstant() == 0:
        return x.getVar(0)
    raise ModelingError(10003, "%s must be a single variable" % what)


def indicator_of(cond, constr):
    """(b == 1) >> (linear constraint), Gurobi's indicator shorthand."""
    if type(cond) is not TempConstr or cond._sense != "=":
        raise ModelingError(10003, "an indicator's condition must be (binary variable == 0 or 1)")
    binvar = single_var(cond._lhs, "an indicator's condition")
    val = _num(cond._rhs) if isinstance(cond._rhs, numbers.Number) else None
    if val not in (0.0, 1.0):
        raise ModelingError(10003, "an indicator's condition must compare its binary variable with 0 or 1")
    if type(constr) is not TempConstr:
        raise ModelingError(10003, "an indicator implies a linear constraint such as x + y <= 3")
    return GenTempConstr(None, None, (binvar, int(val), constr))


# --- the linear formulation ------------------------------------------------------------------

def _bounds(model, v):
    rec = model._vrec[v._index]
    return rec[1], rec[2]


def _need(value, what, name):
    if value >= INF or value <= -INF:
        raise UnsupportedCall(10003, "general constraint %s: %s is infinite; trex states %s constraints as "
                              "linear rows with big-M coefficients from the variables' bounds, so give "
                              "the variables finite bounds" % (name, what, name.split(" ")[0]))
    return value


def _binary(model, v, name):
    lb, ub = _bounds(model, v)
    t = model._vrec[v._index][3]
    if not (t == "B" or t == "I" and lb >= 0 and ub <= 1):
        raise ModelingError(10003, "general constraint %s: variable %s must be binary" % (name, model._vrec[v._index][0]))


def _activity(model, terms):
    lo = hi = 0.0
    for v, a in terms:
        lb, ub = _bounds(model, v)
        lo += a * (lb if a > 0 else ub)
        hi += a * (ub if a > 0 else lb)
    return lo, hi


def linearise(model, pos, add_var, add_row):
    """Adds each live general and SOS constraint's formulation through add_var(name) -> index
    (a new binary) and add_row(name, terms {index: coef}, sense, rhs); pos maps a variable's
    _index to its column."""
    gone = model._var_gone
    for k, g in enumerate(model._gen):
        if g["gone"]:
            continue
        tag = "%s (%s)" % (g["kind"], g["name"])
        if g["kind"] == "INDICATOR":
            if g["bin"]._index in gone:
                continue
            _binary(model, g["bin"], tag)
            terms = {}
            for v, a in g["terms"]:
                if v._index not in gone:
                    terms[v] = terms.get(v, 0.0) + a
            terms = [(v, a) for v, a in terms.items() if a != 0]
            lo, hi = _activity(model, terms)
            z, on = pos[g["bin"]._index], g["val"]
            row = {pos[v._index]: a for v, a in terms}
            b = g["rhs"]
            if g["sense"] in ("<", "=") and hi > b:
                m_ = _need(hi, "the largest value of the implied row", tag) - b
                # active when z == on: row + M z <= b + M (on = 1), row - M z <= b (on = 0)
                add_row(g["name"] + "_ub", _with(row, z, m_ if on else -m_), "<", b + (m_ if on else 0.0))
            if g["sense"] in (">", "=") and lo < b:
                m_ = b - _need(lo, "the smallest value of the implied row", tag)
                add_row(g["name"] + "_lb", _with(row, z, -m_ if on else m_), ">", b - (m_ if on else 0.0))
            continue
        res, args = g["res"], g["args"]
        if res._index in gone or any(v._index in gone for v in args):
            continue
        r = pos[res._index]
        kind = g["kind"]
        if kind in ("AND", "OR"):
            for v in [res] + list(args):
                _binary(model, v, tag)
            n = len(args)
            for v in args:  # AND: r <= x_i; OR: r >= x_i
                add_row(g["name"] + "_%d" % pos[v._index], _with({r: 1.0}, pos[v._index], -1.0), "<" if kind == "AND" else ">", 0.0)
            row = {r: 1.0}
            for v in args:
                row = _with(row, pos[v._index], -1.0)
            if kind == "AND":  # r >= sum x_i - (n - 1)
                add_row(g["name"] + "_all", row, ">", -(n - 1.0))
            else:  # r <= sum x_i
                add_row(g["name"] + "_any", row, "<", 0.0)
            continue
        if kind == "ABS":
            x = args[0]
            lb, ub = _bounds(model, x)
            c = pos[x._index]
            if lb >= 0:
                add_row(g["name"], _with({r: 1.0}, c, -1.0), "=", 0.0)
                continue
            if ub <= 0:
                add_row(g["name"], _with({r: 1.0}, c, 1.0), "=", 0.0)
                continue
            m_ = 2 * max(-_need(lb, "the lower bound of the argument", tag), _need(ub, "the upper bound of the argument", tag))
            z = add_var(g["name"] + "_pos")
            add_row(g["name"] + "_a", _with({r: 1.0}, c, -1.0), ">", 0.0)          # r >= x
            add_row(g["name"] + "_b", _with({r: 1.0}, c, 1.0), ">", 0.0)           # r >= -x
            add_row(g["name"] + "_c", _with(_with({r: 1.0}, c, -1.0), z, m_), "<", m_)  # r <= x + M (1 - z)
            add_row(g["name"] + "_d", _with(_with({r: 1.0}, c, 1.0), z, -m_), "<", 0.0)  # r <= -x + M z
            continue
        # MAX / MIN over the arguments and the constant: r on the right side of each, and equal
        # to the one its binary chooses.
        opts = [(pos[v._index],) + _bounds(model, v) for v in args]
        if g["const"] is not None:
            opts.append((None, g["const"], g["const"]))
        if not opts:
            raise ModelingError(10003, "general constraint %s has no arguments" % tag)
        zs = []
        if kind == "MAX":
            top = max(_need(o[2], "an argument's upper bound", tag) for o in opts)
            for n, (c, lb, ub) in enumerate(opts):
                m_ = top - _need(lb, "an argument's lower bound", tag)
                z = add_var(g["name"] + "_z%d" % n)
                zs.append(z)
                if c is None:  # r >= const; r <= const + M (1 - z)
                    add_row(g["name"] + "_ge%d" % n, {r: 1.0}, ">", lb)
                    add_row(g["name"] + "_le%d" % n, _with({r: 1.0}, z, m_), "<", lb + m_)
                else:
                    add_row(g["name"] + "_ge%d" % n, _with({r: 1.0}, c, -1.0), ">", 0.0)
                    add_row(g["name"] + "_le%d" % n, _with(_with({r: 1.0}, c, -1.0), z, m_), "<", m_)
        else:
            bottom = min(_need(o[1], "an argument's lower bound", tag) for o in opts)
            for n, (c, lb, ub) in enumerate(opts):
                m_ = _need(ub, "an argument's upper bound", tag) - bottom
                z = add_var(g["name"] + "_z%d" % n)
                zs.append(z)
                if c is None:  # r <= const; r >= const - M (1 - z)
                    add_row(g["name"] + "_le%d" % n, {r: 1.0}, "<", ub)
                    add_row(g["name"] + "_ge%d" % n, _with({r: 1.0}, z, -m_), ">", ub - m_)
                else:
                    add_row(g["name"] + "_le%d" % n, _with({r: 1.0}, c, -1.0), "<", 0.0)
                    add_row(g["name"] + "_ge%d" % n, _with(_with({r: 1.0}, c, -1.0), z, -m_), ">", -m_)
        add_row(g["name"] + "_one", {z: 1.0 for z in zs}, "=", 1.0)
    for k, s in enumerate(model._sos):
        if s["gone"]:
            continue
        tag = "SOS (%s)" % s["name"]
        members = sorted((w, n, v) for n, (v, w) in enumerate(zip(s["vars"], s["weights"])) if v._index not in gone)
        vs = [v for _, _, v in members]
        if s["type"] == 1:
            picks = [add_var(s["name"] + "_z%d" % n) for n in range(len(vs))]
            cover = [[n] for n in range(len(vs))]
        else:  # SOS2: one binary per pair of neighbours; a member may be non-zero only beside its pair
            picks = [add_var(s["name"] + "_z%d" % n) for n in range(max(len(vs) - 1, 0))]
            cover = [[j for j in (n - 1, n) if 0 <= j < len(picks)] for n in range(len(vs))]
        for n, v in enumerate(vs):
            lb, ub = _bounds(model, v)
            c = pos[v._index]
            if not cover[n]:
                continue
            if ub > 0:
                row = {c: 1.0}
                for j in cover[n]:
                    row = _with(row, picks[j], -_need(ub, "the upper bound of %s" % model._vrec[v._index][0], tag))
                add_row(s["name"] + "_ub%d" % n, row, "<", 0.0)
            if lb < 0:
                row = {c: 1.0}
                for j in cover[n]:
                    row = _with(row, picks[j], -_need(lb, "the lower bound of %s" % model._vrec[v._index][0], tag))
                add_row(s["name"] + "_lb%d" % n, row, ">", 0.0)
        if picks:
            add_row(s["name"] + "_one", {z: 1.0 for z in picks}, "<", 1.0)


def _with(row, col, coef):
    out = dict(row)
    out[col] = out.get(col, 0.0) + coef
    return out


# --- LP sections -------------------------------------------------------------------------------

def written(model, pos):
    """The general and SOS constraints for the LP writer, by column: indicators [name, bin col,
    value, cols, coefs, sense, rhs], general [name, kind, res col, [arg cols], constant or None],
    sos [name, type, [cols], [weights]]."""
    gone = model._var_gone
    ind, gen, sos = [], [], []
    for g in model._gen:
        if g["gone"]:
            continue
        if g["kind"] == "INDICATOR":
            if g["bin"]._index in gone:
                continue
            merged = {}
            for v, a in g["terms"]:
                if v._index not in gone:
                    merged[v] = merged.get(v, 0.0) + a
            lin = sorted(((pos[v._index], a) for v, a in merged.items() if a != 0))
            ind.append([g["name"], pos[g["bin"]._index], g["val"], [c for c, _ in lin], [a for _, a in lin],
                        g["sense"], g["rhs"]])
        elif g["res"]._index not in gone and not any(v._index in gone for v in g["args"]):
            gen.append([g["name"], g["kind"], pos[g["res"]._index], [pos[v._index] for v in g["args"]], g["const"]])
    for s in model._sos:
        if not s["gone"]:
            live = [(pos[v._index], w) for v, w in zip(s["vars"], s["weights"]) if v._index not in gone]
            sos.append([s["name"], s["type"], [c for c, _ in live], [w for _, w in live]])
    return ind, gen, sos


class GenConstr:
    """A general constraint of a model: GenConstrName, GenConstrType, removable."""
    __slots__ = ("_model", "_index")

    def __init__(self, model, index):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, name):
        g = self._model._gen[self._index]
        key = name.lower()
        if key in ("genconstrname", "name"):
            return g["name"]
        if key == "genconstrtype":
            return KIND_CODES[g["kind"]]
        raise AttributeError("'GenConstr' object has no attribute '%s'" % name)

    def getAttr(self, name):
        return getattr(self, name)

    def __repr__(self):
        return "<gurobi.GenConstr %s>" % self._model._gen[self._index]["name"]


class SOS:
    """An SOS constraint of a model (Model.addSOS): removable, getSOS gives its members."""
    __slots__ = ("_model", "_index")

    def __init__(self, model, index):
        self._model, self._index = model, index

    def __repr__(self):
        return "<gurobi.SOS %s>" % self._model._sos[self._index]["name"]
