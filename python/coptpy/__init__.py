"""A coptpy-compatible modelling module (the Python interface of the COPT solver), backed by
trex's solvers: no COPT licence.

The model, expressions and solving are trex_modeling's, shared with the gurobipy-compatible
module; this file maps coptpy's names onto them: Envr and createModel, the COPT constants and
status codes (OPTIMAL 1, INFEASIBLE 2, UNBOUNDED 3, INF_OR_UNB 4, TIMEOUT 8), lower-case
attributes (model.status, model.objval, x.x, x.name), getInfo("Value"), senses 'L'/'G'/'E',
addVars(..., nameprefix=) naming "x(0,1)". solve() hands the model to trex exactly as
gurobipy's optimize() does, and prints COPT's closing lines ("Best solution : ..." or the
status) unless Logging is 0.

Outside the emulated surface (callbacks, cones, SOS, indicator and general constraints, IIS,
duals) a call raises CoptError naming it: the runner classes that apart from the program's
own errors.
"""

from trex_modeling import (INF as _INF, AttrError as _AttrError, Constr, LinExpr, ModelingError,
                           QuadExpr, TempConstr, UnsupportedCall as _Unsupported, Var, multidict,
                           quicksum, tupledict, tuplelist)
from trex_modeling import model as _core
from trex_modeling.expr import _num

__version__ = "7.1.1-trex"

CoptError = ModelingError


class COPT:
    CONTINUOUS, BINARY, INTEGER = "C", "B", "I"
    MINIMIZE, MAXIMIZE = 1, -1
    LESS_EQUAL, GREATER_EQUAL, EQUAL, FREE, RANGE = "L", "G", "E", "N", "R"
    INFINITY = 1e30
    UNDEFINED = 1e40
    UNSTARTED, OPTIMAL, INFEASIBLE, UNBOUNDED, INF_OR_UNB = 0, 1, 2, 3, 4
    NUMERICAL, NODELIMIT, IMPRECISE, TIMEOUT, UNFINISHED, INTERRUPTED = 5, 6, 7, 8, 9, 10
    CLIENT, SERVER = 0, 1

    class Param:
        TimeLimit, Logging, LogToConsole, Threads, RelGap = "TimeLimit", "Logging", "LogToConsole", "Threads", "RelGap"
        AbsGap, FeasTol, IntTol, Presolve, LpMethod = "AbsGap", "FeasTol", "IntTol", "Presolve", "LpMethod"

    class Attr:
        Cols, Rows, Elems, Bins, Ints, QElems = "Cols", "Rows", "Elems", "Bins", "Ints", "QElems"
        ObjSense, ObjConst, IsMIP, LpStatus, MipStatus = "ObjSense", "ObjConst", "IsMIP", "LpStatus", "MipStatus"
        LpObjval, BestObj, BestBnd, BestGap, SolvingTime = "LpObjval", "BestObj", "BestBnd", "BestGap", "SolvingTime"
        HasLpSol, HasMipSol, PoolSols = "HasLpSol", "HasMipSol", "PoolSols"

    class Info:
        Obj, LB, UB, Value, Slack, Dual, RedCost = "Obj", "LB", "UB", "Value", "Slack", "Dual", "RedCost"


_STATUS_CODES = {"optimal": COPT.OPTIMAL, "infeasible": COPT.INFEASIBLE, "unbounded": COPT.UNBOUNDED,
                 "infeasible_or_unbounded": COPT.INF_OR_UNB, "time_limit_feasible": COPT.TIMEOUT,
                 "time_limit_no_solution": COPT.TIMEOUT}
_SENSES = {"L": "<", "G": ">", "E": "="}


def _unsupported(what):
    def f(*a, **k):
        raise _Unsupported(3, "coptpy: %s is not supported by trex" % what)
    return f


class Envr:
    """There is no licence to check: an environment only creates models."""

    def __init__(self, *args, **kwargs):
        pass

    def createModel(self, name=""):
        return Model(self, name)

    def close(self):
        pass


class EnvrConfig:
    def __init__(self):
        self._values = {}

    def set(self, name, value):
        self._values[name] = value


class Model(_core.ModelCore):
    _api_name = "coptpy"

    def __init__(self, env=None, name=""):
        _core.ModelCore.__init__(self, name)
        self.__dict__["_params"] = {"TimeLimit": _INF, "Logging": 1, "LogToConsole": 1}

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name.lower() == "objsense":
            self.setObjSense(value)
        else:
            raise CoptError(3, "coptpy: cannot set model attribute '%s'" % name)

    def _indexed_name(self, prefix, key):
        inner = ",".join(str(p) for p in (key if isinstance(key, tuple) else (key,)))
        return "%s(%s)" % (prefix, inner)

    # variables
    def addVar(self, lb=0.0, ub=COPT.INFINITY, obj=0.0, vtype=COPT.CONTINUOUS, name="", column=None):
        if column is not None:
            raise _Unsupported(3, "coptpy: addVar(column=...) is not supported by trex")
        return self._new_var(lb, ub, obj, vtype, name)

    def addVars(self, *indices, lb=0.0, ub=COPT.INFINITY, obj=0.0, vtype=COPT.CONTINUOUS, nameprefix="C", name=None):
        return self._new_vars(indices, lb, ub, obj, vtype, name if name is not None else nameprefix)

    def getVars(self):
        return self._active_vars()

    def getVar(self, idx):
        return self._active_vars()[idx]

    def getVarByName(self, name):
        v = self._var_by_name(name)
        if v is None:
            raise CoptError(3, "coptpy: no variable named '%s'" % name)
        return v

    # constraints
    def addConstr(self, lhs, sense=None, rhs=None, name=""):
        if isinstance(lhs, TempConstr) or isinstance(lhs, bool) or type(lhs).__name__ == "bool_":
            return self._add_constr(lhs, None, None, sense if isinstance(sense, str) and sense not in _SENSES and not name else name)
        if sense is None:
            raise CoptError(3, "coptpy: addConstr needs a constraint or (lhs, sense, rhs)")
        return self._add_constr(lhs, _SENSES.get(sense, sense), rhs, name)

    addQConstr = addConstr

    def addBoundConstr(self, expr, lb=-COPT.INFINITY, ub=COPT.INFINITY, name=""):
        if lb > -COPT.INFINITY:
            c = self._add_constr(expr, ">", lb, name)
        if ub < COPT.INFINITY:
            c = self._add_constr(expr, "<", ub, (name + "_ub") if name and lb > -COPT.INFINITY else name)
        return c

    def addConstrs(self, generator, nameprefix="R", name=None):
        return self._add_constrs(generator, name if name is not None else nameprefix)

    def getConstrs(self):
        return self._active_constrs()

    def getConstrByName(self, name):
        for c in self._active_constrs():
            if self._crec[c._index]["name"] == name:
                return c
        raise CoptError(3, "coptpy: no constraint named '%s'" % name)

    def remove(self, item):
        self._remove(item)

    # objective
    def setObjective(self, expr, sense=None):
        self._set_objective(expr, sense)

    # Each value checked before the model changes (_changed).
    def setObjSense(self, sense):
        sense = int(sense)
        self._changed()
        self._sense = sense

    def setObjConst(self, c):
        c = _num(c)
        self._changed()
        self._objcon = c

    def getObjective(self):
        return self._objective()

    addSOS = _unsupported("SOS constraints (addSOS)")
    addGenConstrIndicator = _unsupported("indicator constraints (addGenConstrIndicator)")
    addIndicator = _unsupported("indicator constraints (addIndicator)")
    addCone = addConeConstr = addExpCone = _unsupported("cone constraints")
    addUserCut = addLazyConstr = setCallback = _unsupported("callbacks and lazy constraints")
    computeIIS = _unsupported("computeIIS")
    feasRelax = _unsupported("feasRelax")

    # parameters and attributes
    def setParam(self, name, value):
        self._params[str(name)] = value

    def getParam(self, name):
        return self._params.get(str(name), 0)

    def _param(self, name):
        for k, v in self._params.items():
            if k.lower() == name.lower():
                return v
        return None

    def getAttr(self, name):
        key = str(name).lower()
        r = self._result
        if key in ("cols",):
            return len(self._active_vars())
        if key in ("rows",):
            return len(self._active_constrs())
        if key == "bins":
            return sum(1 for v in self._active_vars() if self._vrec[v._index][3] == "B")
        if key == "ints":
            return sum(1 for v in self._active_vars() if self._vrec[v._index][3] == "I")
        if key == "ismip":
            return int(any(self._vrec[v._index][3] != "C" for v in self._active_vars()))
        if key == "objsense":
            return self._sense
        if key == "objconst":
            return self._objcon
        if key in ("lpstatus", "mipstatus"):
            return COPT.UNSTARTED if r is None else _STATUS_CODES.get(r["status"], COPT.NUMERICAL)
        if key in ("lpobjval", "bestobj", "bestbnd"):
            return self._objval(name) if self._has_solution() else COPT.INFINITY
        if key in ("haslpsol", "hasmipsol"):
            return int(self._has_solution())
        if key == "solvingtime":
            return 0.0 if r is None else r.get("seconds", 0.0)
        if key == "bestgap":
            return 0.0
        raise CoptError(3, "coptpy: unknown attribute '%s'" % name)

    def getInfo(self, name, objs):
        if isinstance(objs, dict):
            out = tupledict()
            for k, o in objs.items():
                out[k] = o.getInfo(name)
            return out
        return [o.getInfo(name) for o in objs]

    def getValues(self, objs=None):
        return [v.x for v in (self._active_vars() if objs is None else objs)]

    @property
    def status(self):
        r = self._result
        return COPT.UNSTARTED if r is None else _STATUS_CODES.get(r["status"], COPT.NUMERICAL)

    @property
    def objval(self):
        # COPT answers the objective of the solution it has; without one, reading it is an
        # error in COPT ("Solution is not available"), which ORLM's programs print around.
        return self._objval("objval")

    def __getattr__(self, name):
        # COPT reads model attributes case-blind (model.Status, model.ObjVal, model.LpObjVal);
        # ORLM's programs use both spellings.
        key = name.lower()
        if key == "status":
            return Model.status.fget(self)
        if key == "objval":  # also reached when the property itself raised AttributeError
            return Model.objval.fget(self)
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.getAttr(name)
        except CoptError:
            raise _AttrError(3, "'Model' object has no attribute '%s'" % name)

    # files
    def write(self, filename):
        self._write(filename)

    writeLp = writeMps = write

    # solving
    def solve(self):
        limit = self._param("TimeLimit")
        status = self._solve(limit if limit and limit < 1e9 else None)
        if status not in _STATUS_CODES:
            raise CoptError(3, "coptpy: trex could not solve the model: %s" % (self._result.get("message") or status))
        if int(self._param("Logging") if self._param("Logging") is not None else 1) and int(self._param("LogToConsole") or 0):
            r = self._result
            if r["x"] is not None:
                print("Best solution   : %.9f" % r["objective"])
            else:
                print("Solution status : %s" % status.replace("_", " "))

    solveLP = solve


def _var_getinfo(self, name):
    key = str(name).lower()
    if key == "value":
        return self._model._value(self)
    if key in ("lb", "ub", "obj"):
        return self._model._var_attr(self, key)
    if key in ("slack", "dual", "redcost"):
        raise _Unsupported(3, "coptpy: %s is not computed by trex" % name)
    raise CoptError(3, "coptpy: unknown information '%s'" % name)


def _constr_getinfo(self, name):
    key = str(name).lower()
    if key == "slack":
        return self._model._constr_attr(self, "slack")
    raise _Unsupported(3, "coptpy: constraint information '%s' is not computed by trex" % name)


# coptpy's Var and Constr methods; the attribute names (x, name, lb, ub, vtype) the core
# already answers case-blind.
Var.getInfo = _var_getinfo
Var.getName = lambda self: self._model._var_attr(self, "name")
Var.getType = lambda self: self._model._var_attr(self, "vtype")
Var.getIdx = lambda self: self._model._var_position(self)
Constr.getInfo = _constr_getinfo
Constr.getName = lambda self: self._model._constr_attr(self, "name")


def max_(*args, **kwargs):
    raise _Unsupported(3, "coptpy: general constraints (max_) are not supported by trex")


min_ = abs_ = and_ = or_ = max_

__all__ = ["COPT", "CoptError", "Envr", "EnvrConfig", "Model", "Var", "Constr", "LinExpr", "QuadExpr",
           "quicksum", "tupledict", "tuplelist", "multidict"]
