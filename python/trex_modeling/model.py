"""The model store every emulated library shares: variables, rows, objective, removal, values.

A skin (gurobipy.Model, coptpy.Model) subclasses ModelCore and maps its own attribute and
method names onto the methods here. Rows keep Var objects, not positions, so removing a
variable or a row never renumbers what a program holds; positions are given out only when the
model is serialised (_to_json), over the rows and variables still present.
"""

import itertools
import numbers

from . import solve as _solve_mod
from .errors import AttrError, ModelingError, UnsupportedCall
from .expr import INF, LinExpr, QuadExpr, TempConstr, Var, _new_object, _num, _var, quicksum, tupledict

_last = [None]    # the most recently created model, for the runner
_solved = [None]  # the model of the most recent solve


def last_model():
    return _last[0]


def last_solved():
    return _solved[0]


class Constr:
    __slots__ = ("_model", "_index")

    def __init__(self, model, index):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, name):
        return self._model._constr_attr(self, name)

    def __setattr__(self, name, value):
        self._model._set_constr_attr(self, name, value)

    def getAttr(self, name):
        return self._model._constr_attr(self, name)

    def setAttr(self, name, value):
        self._model._set_constr_attr(self, name, value)

    def index(self):
        return self._model._constr_position(self)

    def sameAs(self, other):
        return self is other

    def __repr__(self):
        return "<%s.Constr %s>" % (self._model._api_name, self._model._crec[self._index]["name"])


_set_constr_model = Constr._model.__set__
_set_constr_index = Constr._index.__set__


def _bound(x):
    """A bound as stored: magnitudes from 1e30 up are infinite (Gurobi's and COPT's rule)."""
    x = _num(x)
    return INF if x >= 1e30 else -INF if x <= -1e30 else x + 0.0


def _sense_of(s):
    s = {"<=": "<", ">=": ">", "==": "=", "=<": "<", "=>": ">"}.get(s, s)
    if s not in ("<", ">", "="):
        raise ModelingError(10003, "Invalid constraint sense %r" % (s,))
    return s


def _no_nan(values):
    """(values: a list or a dict's values, read twice.) Raises Gurobi's "Invalid argument: NaN" if any of the numbers is NaN. One C-level sum
    first, as a row is checked on every addConstr: only a NaN sum (a NaN, or inf and -inf)
    is looked at term by term."""
    s = sum(values)
    if s != s:
        for x in values:
            _num(x)


class ModelCore:
    _api_name = "trex"

    def __init__(self, name=""):
        d = self.__dict__
        d["_name"] = str(name)
        d["_vrec"] = []          # per variable: [name, lb, ub, vtype "C"|"B"|"I", obj]
        d["_var_objs"] = []
        d["_var_gone"] = set()   # removed variable indices
        d["_crec"] = []       # per row: dict name, terms [(Var, coef)], quad [(coef, Var, Var)], sense, rhs, gone
        d["_constr_objs"] = []
        d["_objcon"] = 0.0
        d["_objq"] = []          # (coef, Var, Var)
        d["_gen"] = []           # general constraints as stated (general.py): dicts with kind, name, gone
        d["_sos"] = []           # SOS constraints: dicts type, vars, weights, name, gone
        d["_sense"] = 1          # 1 minimise, -1 maximise
        d["_result"] = None      # {"status", "objective", "x": {var index: value}, "seconds"}
        d["_json"] = None        # the record (_to_json) until the model changes
        _last[0] = self

    def _changed(self, problem=True):
        """Every change to what the model holds comes through here (the skins' setters too),
        after its arguments are checked and before anything is modified, so a call that raises
        leaves the model, its record and its solution as they were. The record kept for the
        model as it was is dropped; so is the solution, unless the change leaves the problem
        as it was (problem=False: a model, variable or constraint name), as Gurobi keeps the
        solution of a renamed model."""
        d = self.__dict__
        if problem:
            d["_result"] = None
        d["_json"] = None

    # --- variables -------------------------------------------------------------------------

    def _new_var(self, lb=0.0, ub=INF, obj=0.0, vtype="C", name=""):
        vtype = str(vtype).upper()[:1]
        if vtype not in ("C", "B", "I"):
            raise UnsupportedCall(10003, "variable type %r is not supported by trex" % vtype)
        idx = len(self._vrec)
        lb, ub = _bound(lb), _bound(ub)
        if vtype == "B":  # gurobipy/coptpy clamp a binary's bounds to [0, 1]
            lb, ub = max(lb, 0.0), min(ub, 1.0)
        rec = [str(name) if name not in (None, "") else "C%d" % idx, lb, ub, vtype, _num(obj)]
        self._changed()
        self._vrec.append(rec)
        v = _var(self, idx)
        self._var_objs.append(v)
        return v

    def _indexed_name(self, prefix, key):
        inner = ",".join(str(p) for p in (key if isinstance(key, tuple) else (key,)))
        return "%s[%s]" % (prefix, inner)

    @staticmethod
    def _index_keys(indices):
        """The keys addVars makes: one iterable of keys (tuples stay tuples), or the product of
        several (an integer n stands for range(n))."""
        if len(indices) == 1 and not isinstance(indices[0], numbers.Number):
            return list(indices[0])
        lists = [range(int(i)) if isinstance(i, numbers.Number) else list(i) for i in indices]
        return [k[0] if len(k) == 1 else tuple(itertools.chain.from_iterable(p if isinstance(p, tuple) else (p,) for p in k))
                for k in itertools.product(*lists)]

    def _new_vars(self, indices, lb, ub, obj, vtype, name):
        keys = self._index_keys(indices)
        out = tupledict()
        if keys and type(name) is str and all(type(a) in (float, int, str) for a in (lb, ub, obj, vtype)):
            return self._new_vars_alike(keys, lb, ub, obj, vtype, name, out)

        def pick(v, k, pos):
            if isinstance(v, dict):
                return v[k]
            if isinstance(v, str):
                return v
            if hasattr(v, "__len__") and hasattr(v, "__getitem__"):
                return v[pos]
            return v

        for pos, k in enumerate(keys):
            if isinstance(name, (list, tuple, dict)):
                nm = pick(name, k, pos)
            elif name:
                nm = self._indexed_name(name, k)
            else:
                nm = ""
            out[k] = self._new_var(pick(lb, k, pos), pick(ub, k, pos), pick(obj, k, pos), pick(vtype, k, pos), nm)
        return out

    def _new_vars_alike(self, keys, lb, ub, obj, vtype, name, out):
        """_new_vars for the common call: one bound, objective and type for every key (a number
        or a string, which pick() hands to each _new_var as it is) and names made from a string.
        _new_var's checks and conversions, in its order, made once instead of per variable: the
        same records, the same exception before any variable is added."""
        vtype = str(vtype).upper()[:1]
        if vtype not in ("C", "B", "I"):
            raise UnsupportedCall(10003, "variable type %r is not supported by trex" % vtype)
        lb, ub = _bound(lb), _bound(ub)
        if vtype == "B":
            lb, ub = max(lb, 0.0), min(ub, 1.0)
        obj = _num(obj)
        self._changed()
        vrec, objs = self._vrec, self._var_objs
        idx = len(vrec)
        own_names = type(self)._indexed_name is ModelCore._indexed_name  # coptpy writes x(1,2)
        for k in keys:
            if not name:
                nm = "C%d" % idx
            elif own_names:  # _indexed_name's text without the call
                nm = "%s[%s]" % (name, ",".join(map(str, k)) if isinstance(k, tuple) else str(k))
            else:
                nm = self._indexed_name(name, k)
            vrec.append([nm, lb, ub, vtype, obj])
            v = _var(self, idx)
            objs.append(v)
            out[k] = v
            idx += 1
        return out

    def _active_vars(self):
        gone = self._var_gone
        if not gone:
            return list(self._var_objs)
        return [v for v in self._var_objs if v._index not in gone]

    def _var_by_name(self, name):
        for v in self._active_vars():
            if self._vrec[v._index][0] == name:
                return v
        return None

    def _var_position(self, v):
        return sum(1 for i in range(v._index) if i not in self._var_gone)

    def _value(self, v):
        r = self._result
        if r is None or r.get("x") is None:
            raise AttrError(10005, "Unable to retrieve attribute 'X'")
        return r["x"][v._index]

    def _var_attr(self, v, name):
        key = name.lower()
        rec = self._vrec[v._index]
        if key in ("varname", "name"):
            return rec[0]
        if key == "lb":
            return rec[1]
        if key == "ub":
            return rec[2]
        if key == "vtype":
            return rec[3]
        if key == "obj":
            return rec[4]
        if key in ("x", "value"):
            return self._value(v)
        if key == "index":
            return self._var_position(v)
        if key == "rc":
            from .duals import duals
            return duals(self, name)[1][v._index]
        if key in ("start", "xn", "vbasis", "iisub", "iislb"):
            raise AttrError(10005, "Unable to retrieve attribute '%s'" % name)
        raise AttributeError("'Var' object has no attribute '%s'" % name)

    def _set_var_attr(self, v, name, value):
        key = name.lower()
        rec = self._vrec[v._index]
        if key in ("varname", "name"):
            field, value = 0, str(value)
        elif key in ("lb", "ub"):
            field, value = 1 if key == "lb" else 2, _bound(value)
        elif key == "obj":
            field, value = 4, _num(value)
        elif key == "vtype":
            t = str(value).upper()[:1]
            if t not in ("C", "B", "I"):
                raise UnsupportedCall(10003, "variable type %r is not supported by trex" % value)
            field, value = 3, t
        elif key in ("start", "varhintval", "varhintpri", "branchpriority"):
            return  # hints change how a solver searches, never the model
        else:
            raise ModelingError(10003, "cannot set variable attribute '%s'" % name)
        self._changed(problem=field != 0)
        rec[field] = value

    # --- rows ------------------------------------------------------------------------------

    def _check_var(self, v):
        if not isinstance(v, Var) or v._model is not self:
            raise ModelingError(10003, "a constraint or objective uses a variable of another model")
        if v._index in self._var_gone:
            raise ModelingError(10003, "a constraint or objective uses a removed variable")

    def _check_vars(self, vars_):
        """_check_var for each of vars_, with the test that passes for nearly every term made
        here (a Var of this model, none removed) and _check_var only for the others."""
        gone = self._var_gone
        for v in vars_:
            if type(v) is not Var or v._model is not self or gone and v._index in gone:
                self._check_var(v)

    def _add_constr(self, lhs, sense, rhs, name):
        if type(lhs) is TempConstr and sense is None:
            # The common row, "linear expression, sense, number / variable / linear expression"
            # (x + y <= 3, x[i] >= y): the general path's lists and constant below made without
            # the expression copied twice (quicksum([lhs]), then -= rhs), the same sums in the
            # same order. Anything else (a quadratic, a general constraint, numpy numbers) goes on.
            e, r = lhs._lhs, lhs._rhs
            tr = type(r)
            if type(e) is LinExpr and (tr is float or tr is int or tr is Var or tr is LinExpr):
                sense = _sense_of(lhs._sense)
                if tr is Var:
                    vars_, coefs, const = e._vars + [r], e._coefs + [-1.0], 0.0 + 1.0 * e._const
                elif tr is LinExpr:
                    vars_, coefs = e._vars + r._vars, e._coefs + [c * -1.0 for c in r._coefs]
                    const = 0.0 + 1.0 * e._const + -1.0 * r._const
                else:
                    vars_, coefs, const = e._vars, e._coefs, 0.0 + 1.0 * e._const + -1.0 * _num(r)
                self._check_vars(vars_)
                _no_nan(coefs)
                return self._append_row(name, list(zip(vars_, coefs)), [], sense, _num(0.0 - const))
        if isinstance(lhs, TempConstr) and sense is None:
            if hasattr(lhs, "add_to"):  # a general constraint or an indicator (general.py)
                return lhs.add_to(self, name)
            if type(lhs._rhs).__name__ == "GenExpr":  # var == max_(...): Var.__eq__ made it
                if lhs._sense != "=":
                    raise ModelingError(10003, "a general constraint is stated as var == max_(...), with ==")
                from .general import GenTempConstr
                return GenTempConstr(lhs._lhs, lhs._rhs).add_to(self, name)
            lhs, sense, rhs = lhs._lhs, lhs._sense, lhs._rhs
        if lhs is None:
            raise ModelingError(10003, "Invalid argument to addConstr")
        if isinstance(lhs, bool) or type(lhs).__name__ == "bool_":
            # A comparison Python already decided (e.g. two empty sums). Gurobi records it as an
            # empty row, "R: <= 0" when true and "R: <= -1" when false; so does this module.
            lhs, sense, rhs = LinExpr(), "<", 0.0 if bool(lhs) else -1.0
        sense = _sense_of(sense)
        expr = quicksum([lhs])  # a new expression: the right-hand side goes into it in place
        expr -= rhs if rhs is not None else 0
        lin, qterms = (expr._lin, expr._qterms) if isinstance(expr, QuadExpr) else (expr, [])
        self._check_vars(lin._vars)
        for _, a, b in qterms:
            self._check_var(a)
            self._check_var(b)
        _no_nan(lin._coefs)  # a NaN made by the program's arithmetic (inf * 0), as Gurobi refuses it
        _no_nan([q[0] for q in qterms])
        # 0.0 - c, not -c: a zero right-hand side stays +0 (Gurobi never writes "= -0").
        return self._append_row(name, list(zip(lin._vars, lin._coefs)), list(qterms), sense, _num(0.0 - lin._const))

    def _append_row(self, name, terms, quad, sense, rhs):
        """The row, checked, as the model's next one; its Constr (made without __init__'s two
        object.__setattr__ calls: the slots set directly)."""
        k = len(self._crec)
        rec = {"name": str(name) if name not in (None, "") else "R%d" % k,
               "terms": terms, "quad": quad, "sense": sense, "rhs": rhs, "gone": False}
        self._changed()
        self._crec.append(rec)
        c = _new_object(Constr)
        _set_constr_model(c, self)
        _set_constr_index(c, k)
        self._constr_objs.append(c)
        return c

    def _add_general(self, kind, res, args, constant, name):
        """A MAX, MIN, ABS, AND or OR constraint res = KIND(args[, constant]) (general.py)."""
        from .general import GenConstr
        args = list(args)
        for v in [res] + args:
            self._check_var(v)
        if kind == "ABS" and len(args) != 1:
            raise ModelingError(10003, "an ABS constraint takes one argument variable")
        if kind in ("MAX", "MIN") and not args and constant is None:
            raise ModelingError(10003, "a %s constraint needs an argument or a constant" % kind)
        k = len(self._gen)
        rec = {"kind": kind, "res": res, "args": args, "const": None if constant is None else _num(constant) + 0.0,
               "name": str(name) if name not in (None, "") else "GC%d" % k, "gone": False}
        self._changed()
        self._gen.append(rec)
        return GenConstr(self, k)

    def _add_indicator(self, binvar, binval, lhs, sense, rhs, name):
        """binvar == binval implies the linear constraint lhs sense rhs (general.py)."""
        from .general import GenConstr, single_var
        binvar = single_var(binvar, "an indicator's binary variable")
        self._check_var(binvar)
        if isinstance(lhs, TempConstr) and sense is None:
            lhs, sense, rhs = lhs._lhs, lhs._sense, lhs._rhs
        val = 1 if bool(binval) else 0
        sense = _sense_of(sense)
        expr = quicksum([lhs])
        expr -= rhs if rhs is not None else 0
        if isinstance(expr, QuadExpr) and expr._qterms:
            raise ModelingError(10003, "an indicator implies a linear constraint, not a quadratic one")
        lin = expr._lin if isinstance(expr, QuadExpr) else expr
        for v in lin._vars:
            self._check_var(v)
        _no_nan(lin._coefs)
        k = len(self._gen)
        rec = {"kind": "INDICATOR", "bin": binvar, "val": val, "terms": list(zip(lin._vars, lin._coefs)),
               "sense": sense, "rhs": _num(0.0 - lin._const),
               "name": str(name) if name not in (None, "") else "GC%d" % k, "gone": False}
        self._changed()
        self._gen.append(rec)
        return GenConstr(self, k)

    def _add_sos(self, sostype, vars_, weights=None, name=""):
        """An SOS constraint of type 1 or 2 over vars_, ordered by weights (default 1, 2, ...)."""
        from .general import SOS
        vars_ = list(vars_.values()) if isinstance(vars_, dict) else list(vars_)
        weights = list(range(1, len(vars_) + 1)) if weights is None else [_num(w) for w in weights]
        if int(sostype) not in (1, 2):
            raise ModelingError(10003, "SOS type must be 1 or 2")
        if len(weights) != len(vars_):
            raise ModelingError(10003, "addSOS: as many weights as variables are needed")
        if len(set(weights)) != len(weights):
            raise ModelingError(10003, "addSOS: the weights must be distinct (they order the set)")
        for v in vars_:
            self._check_var(v)
        k = len(self._sos)
        rec = {"type": int(sostype), "vars": vars_, "weights": weights,
               "name": str(name) if name not in (None, "") else "s%d" % k, "gone": False}
        self._changed()
        self._sos.append(rec)
        return SOS(self, k)

    def _add_constrs(self, generator, name=""):
        """One row per item of a generator; the keys are the generator's loop variables, read
        from its frame as gurobipy does."""
        out = tupledict()
        frame = getattr(generator, "gi_frame", None)
        for n, tc in enumerate(generator):
            key = n
            if frame is not None:
                loc = frame.f_locals
                names = [v for v in generator.gi_code.co_varnames if v != ".0" and v in loc]
                vals = tuple(loc[v] for v in names)
                if len(vals) == 1:
                    key = vals[0]
                elif vals:
                    key = vals
            out[key] = self._add_constr(tc, None, None, self._indexed_name(name, key) if name else "")
        return out

    def _active_constrs(self):
        return [c for c in self._constr_objs if not self._crec[c._index]["gone"]]

    def _constr_position(self, c):
        return sum(1 for i in range(c._index) if not self._crec[i]["gone"])

    def _row(self, c):
        rec = self._crec[c._index]
        if rec["gone"]:
            raise ModelingError(10003, "the constraint was removed")
        return rec

    def _live_terms(self, terms):
        return [(v, c) for v, c in terms if v._index not in self._var_gone]

    def getRow(self, constr):
        """The row's linear part, each variable once (Gurobi merges repeated terms), in column order."""
        e = LinExpr()
        merged = LinExpr([(c, v) for v, c in self._live_terms(self._row(constr)["terms"])])._merged()
        for v, c in sorted(merged, key=lambda t: t[0]._index):
            e._iadd(v, c)
        return e

    def getCoeff(self, constr, var):
        return sum(c for v, c in self._row(constr)["terms"] if v is var)

    def chgCoeff(self, constr, var, value):
        rec = self._row(constr)
        self._check_var(var)
        value = _num(value)
        terms = [(v, c) for v, c in rec["terms"] if v is not var]
        if value != 0:
            terms.append((var, value))
        self._changed()
        rec["terms"] = terms

    def _constr_attr(self, c, name):
        rec = self._crec[c._index]
        key = name.lower()
        if key in ("constrname", "name", "qcname"):
            return rec["name"]
        if key in ("rhs", "qcrhs"):
            return rec["rhs"]
        if key in ("sense", "qcsense"):
            return rec["sense"]
        if key == "index":
            return self._constr_position(c)
        if key == "slack":
            act = sum(k * self._value(v) for v, k in self._live_terms(rec["terms"]))
            act += sum(k * self._value(a) * self._value(b) for k, a, b in rec["quad"])
            return rec["rhs"] - act
        if key == "pi":
            from .duals import duals
            return duals(self, name)[0][c._index]
        if key in ("qcpi", "cbasis", "iisconstr"):
            raise UnsupportedCall(10003, "attribute '%s' (quadratic duals, bases, IIS) is not computed by trex" % name)
        raise AttributeError("'Constr' object has no attribute '%s'" % name)

    def _set_constr_attr(self, c, name, value):
        rec = self._crec[c._index]
        key = name.lower()
        if key == "rhs":
            field, value = "rhs", _num(value) + 0.0
        elif key in ("constrname", "name"):
            field, value = "name", str(value)
        elif key == "sense":
            field, value = "sense", _sense_of(value)
        else:
            raise ModelingError(10003, "cannot set constraint attribute '%s'" % name)
        self._changed(problem=field != "name")
        rec[field] = value

    def _remove(self, item):
        """Removes rows and variables (and a variable's terms in every row and the objective),
        as Gurobi's Model.remove does; lists, tuples and dicts of them too."""
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            for i in item:
                self._remove(i)
            return
        if isinstance(item, Constr) and item._model is self:
            self._changed()
            self._crec[item._index]["gone"] = True
        elif type(item).__name__ in ("GenConstr", "SOS") and item._model is self:
            self._changed()
            (self._gen if type(item).__name__ == "GenConstr" else self._sos)[item._index]["gone"] = True
        elif isinstance(item, Var) and item._model is self:
            self._changed()
            self._var_gone.add(item._index)
            self._objq = [(c, a, b) for c, a, b in self._objq if a is not item and b is not item]
        else:
            raise UnsupportedCall(10003, "Model.remove: only variables and linear, quadratic, general and SOS constraints of this model can be removed")

    # --- objective -------------------------------------------------------------------------

    def _set_objective(self, expr, sense=None):
        """Replaces the whole objective: every variable's Obj becomes its coefficient in `expr`
        (0 when absent), as Gurobi's setObjective does."""
        e = quicksum([expr])
        lin, q = (e._lin, e._qterms) if isinstance(e, QuadExpr) else (e, [])
        self._check_vars(lin._vars)
        for _, a, b in q:
            self._check_var(a)
            self._check_var(b)
        obj = {}
        for v, c in zip(lin._vars, lin._coefs):
            obj[v._index] = obj.get(v._index, 0.0) + c
        _no_nan(obj.values())
        _no_nan([t[0] for t in q])
        objcon = _num(lin._const)
        sense = self._sense if sense is None else int(sense)
        self._changed()
        for rec in self._vrec:
            rec[4] = 0.0
        for i, c in obj.items():
            self._vrec[i][4] = c
        self._objcon = objcon
        self._objq = list(q)
        self._sense = sense

    def _objective(self):
        lin = LinExpr()
        for v in self._active_vars():
            c = self._vrec[v._index][4]
            if c:
                lin._iadd(v, c)
        lin._const = self._objcon
        if not self._objq:
            return lin
        q = QuadExpr(lin)
        q._qterms = list(self._objq)
        return q

    # --- solving ---------------------------------------------------------------------------

    def _solve(self, time_limit=None):
        """Solves through trex (solve.py) and keeps the result; returns trex's status string
        ("optimal", "infeasible", ...)."""
        m = self._to_json()
        _solved[0] = self
        r = _solve_mod.solve(self, m, time_limit)
        status = r.get("status", "error")
        x = r.get("x")
        pos = [v._index for v in self._active_vars()]
        self._result = {"status": status, "objective": r.get("objective") if x is not None else None,
                        "x": None if x is None else dict(zip(pos, x)), "seconds": r.get("seconds", 0.0),
                        "message": r.get("message", "")}
        du, rc = r.get("duals"), r.get("reduced_costs")
        if status == "optimal" and x is not None and du is not None and rc is not None:
            # Pi and RC as trex's solver computed them (an LP solved to optimality; solve.py):
            # duals.py returns these and makes no second solve.
            cpos = [c._index for c in self._active_constrs()]
            self._result["duals"] = (dict(zip(cpos, du)), dict(zip(pos, rc)))
        return status

    def _has_solution(self):
        return self._result is not None and self._result.get("x") is not None

    def _objval(self, name="ObjVal"):
        r = self._result
        if r is None or r.get("objective") is None:
            raise AttrError(10005, "Unable to retrieve attribute '%s'" % name)
        return r["objective"]

    # --- serialisation ---------------------------------------------------------------------

    def _to_json(self):
        """The record trex reads (src/trex/oreval/model_json.h), made once per state of the
        model: a program that writes its model and is then recorded by the runner (or solves
        it) serialises it once, not two or three times (about 0.3 ms each on the Bench4Opt
        reference programs). Every mutation clears it (_changed). A fresh dict each call, so a
        caller may add keys; the lists inside are shared and never modified."""
        j = self.__dict__["_json"]
        if j is None:
            j = self.__dict__["_json"] = self._record()
        return dict(j)

    def _record(self, stated=False):
        """The record itself: only variables and rows still present, terms merged, -0 written
        as 0. General and SOS constraints come as their linear formulation (general.py), with
        its binaries after the program's variables, or, with stated=True (Model.write), as the
        program stated them, under "indicators", "general" and "sos"."""
        def b(x):  # max(-INF, min(INF, x)) + 0.0 (NaN too: INF), without the two calls
            return (INF if not x < INF else x if x > -INF else -INF) + 0.0

        act = self._active_vars()
        pos = {v._index: p for p, v in enumerate(act)}
        q_obj = QuadExpr()
        q_obj._qterms = self._objq
        gone = self._var_gone
        rows = []
        for c in self._active_constrs():
            rec = self._crec[c._index]
            # LinExpr._merged's sums, in its order, without building the expression: each
            # variable still present once, zeros dropped, in column order. The same sums in the
            # same order with no variable removed (the common case) without the test per term.
            # Sorted as (position, sum) pairs: positions are distinct and grow with _index, so
            # the order is by _index (column order) without a Python key call per term; with no variable
            # removed a variable's position is its _index.
            merged = {}
            get = merged.get
            if gone:
                for v, k in rec["terms"]:
                    if v._index not in gone:
                        merged[v] = get(v, 0.0) + k
                _no_nan(merged.values())  # inf - inf: each term a number, their sum none
                lin = sorted([(pos[v._index], k) for v, k in merged.items() if k != 0])
            else:
                for v, k in rec["terms"]:
                    merged[v] = get(v, 0.0) + k
                _no_nan(merged.values())
                lin = sorted([(v._index, k) for v, k in merged.items() if k != 0])
            quad = []
            if rec["quad"]:  # a linear row (most) makes no QuadExpr: its list is empty either way
                q = QuadExpr()
                q._qterms = [(k, a, bb) for k, a, bb in rec["quad"] if a._index in pos and bb._index in pos]
                qm = q._merged_q()
                _no_nan([t[2] for t in qm])
                quad = [[pos[a._index], pos[bb._index], k + 0.0]
                        for a, bb, k in sorted(qm, key=lambda t: (t[0]._index, t[1]._index))]
            rows.append([rec["name"], rec["sense"], b(rec["rhs"]), [p for p, _ in lin],
                         [k + 0.0 for _, k in lin], quad])
        qm = q_obj._merged_q()
        _no_nan([t[2] for t in qm])
        out = {
            "name": self._name,
            "sense": "max" if self._sense == -1 else "min",
            "constant": self._objcon + 0.0,
            "vars": [[r[0], b(r[1]), b(r[2]), r[3], r[4] + 0.0]
                     for r in (self._vrec if not gone else [self._vrec[v._index] for v in act])],
            "constrs": rows,
            "qobj": [[pos[a._index], pos[bb._index], k + 0.0]
                     for a, bb, k in sorted(qm, key=lambda t: (t[0]._index, t[1]._index))
                     if a._index in pos and bb._index in pos],
        }
        if self._gen or self._sos:
            from . import general
            if stated:
                out["indicators"], out["general"], out["sos"] = general.written(self, pos)
            else:
                vars_, taken = out["vars"], set(v[0] for v in out["vars"])

                def add_var(name):
                    while name in taken:
                        name += "_"
                    taken.add(name)
                    vars_.append([name, 0.0, 1.0, "B", 0.0])
                    return len(vars_) - 1

                def add_row(name, terms, sense, rhs):
                    lin = sorted((c, k + 0.0) for c, k in terms.items() if k != 0)
                    rows.append([name, sense, b(rhs), [c for c, _ in lin], [k for _, k in lin], []])

                general.linearise(self, pos, add_var, add_row)
        return out

    def _lp_text(self):
        from .lp_writer import lp_text
        return lp_text(self._record(stated=True) if self._gen or self._sos else self._to_json())

    def _write(self, filename):
        import json
        filename = str(filename)
        if filename.endswith(".json"):
            text = json.dumps(self._to_json(), allow_nan=False)
        elif filename.endswith(".lp"):
            text = self._lp_text()
        elif filename.endswith(".mps"):
            from .lp_writer import mps_text
            if self._gen or self._sos:
                raise UnsupportedCall(10003, "writing general or SOS constraints to an MPS file is not supported by trex (write .lp)")
            text = mps_text(self._to_json())
        else:
            raise UnsupportedCall(10003, "writing %s files is not supported by trex (only .lp, .mps and .json)"
                                  % filename.rsplit(".", 1)[-1])
        with open(filename, "w") as f:
            f.write(text)
