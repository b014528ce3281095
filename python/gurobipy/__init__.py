"""A gurobipy-compatible modelling module backed by trex's solvers (no Gurobi licence).

The model, expressions and solving are trex_modeling's, shared with the coptpy-compatible
module; this file maps gurobipy's names onto them: GRB constants and status codes, the
attribute names (X, ObjVal, Status, VarName, RHS, ...), Model, Env, read, the gurobi
version object. optimize() hands the model to trex (trex_modeling/solve.py: the sandbox
channel inside `trex eval`, the trex binary elsewhere).

General constraints (max_, min_, abs_, and_, or_, indicators) and SOS constraints are stated
to trex's solvers as their linear MIP formulation (trex_modeling/general.py). What trex cannot
do (callbacks, IIS, quadratic duals, multiple objectives, nonlinear general constraints)
raises GurobiError naming the call; Pi and RC of an LP come with trex's solve
(trex_modeling/duals.py). A program that needs what trex cannot do fails loudly instead of
computing something else. The behaviours that matter to third-party harnesses follow Gurobi's
documentation (Gurobi 12 reference manual, Python API): attribute access on a missing value
raises AttributeError ("Unable to retrieve attribute"), setObjective replaces every
variable's Obj, Model.remove drops rows and columns, Model.write(".lp") lays the file out as
Gurobi does (trex_modeling/lp_writer.py).
"""

import os as _os

from trex_modeling import (INF as _INF, AttrError as _AttrError, Constr, LinExpr, ModelingError,
                           QuadExpr, TempConstr, UnsupportedCall as _Unsupported, Var, multidict,
                           quicksum, tupledict, tuplelist)
from trex_modeling import model as _core
from trex_modeling.expr import _num

__version__ = "12.0.0-trex"

GurobiError = ModelingError


class GRB:
    CONTINUOUS, BINARY, INTEGER, SEMICONT, SEMIINT = "C", "B", "I", "S", "N"
    MINIMIZE, MAXIMIZE = 1, -1
    LESS_EQUAL, GREATER_EQUAL, EQUAL = "<", ">", "="
    INFINITY = _INF
    UNDEFINED = 1e101
    LOADED, OPTIMAL, INFEASIBLE, INF_OR_UNBD, UNBOUNDED = 1, 2, 3, 4, 5
    CUTOFF, ITERATION_LIMIT, NODE_LIMIT, TIME_LIMIT, SOLUTION_LIMIT = 6, 7, 8, 9, 10
    INTERRUPTED, NUMERIC, SUBOPTIMAL, INPROGRESS, USER_OBJ_LIMIT = 11, 12, 13, 14, 15
    WORK_LIMIT, MEM_LIMIT = 16, 17
    SOS_TYPE1, SOS_TYPE2 = 1, 2
    GENCONSTR_MAX, GENCONSTR_MIN, GENCONSTR_ABS, GENCONSTR_AND, GENCONSTR_OR = 0, 1, 2, 3, 4
    GENCONSTR_NORM, GENCONSTR_INDICATOR, GENCONSTR_PWL = 5, 6, 7

    class Status:
        LOADED, OPTIMAL, INFEASIBLE, INF_OR_UNBD, UNBOUNDED = 1, 2, 3, 4, 5
        CUTOFF, ITERATION_LIMIT, NODE_LIMIT, TIME_LIMIT, SOLUTION_LIMIT = 6, 7, 8, 9, 10
        INTERRUPTED, NUMERIC, SUBOPTIMAL, INPROGRESS, USER_OBJ_LIMIT = 11, 12, 13, 14, 15
        WORK_LIMIT, MEM_LIMIT = 16, 17

    class Attr:
        LB, UB, Obj, VType, VarName, X, Start, RC = "LB", "UB", "Obj", "VType", "VarName", "X", "Start", "RC"
        ObjVal, Status, ModelSense, Runtime, SolCount = "ObjVal", "Status", "ModelSense", "Runtime", "SolCount"
        NumVars, NumConstrs, MIPGap, ObjBound, ObjCon = "NumVars", "NumConstrs", "MIPGap", "ObjBound", "ObjCon"
        RHS, Sense, ConstrName, Slack, Pi = "RHS", "Sense", "ConstrName", "Slack", "Pi"
        NumIntVars, NumBinVars, IsMIP, ModelName = "NumIntVars", "NumBinVars", "IsMIP", "ModelName"

    class Param:
        OutputFlag, TimeLimit, MIPGap, Threads, LogToConsole = "OutputFlag", "TimeLimit", "MIPGap", "Threads", "LogToConsole"
        NonConvex, Seed, Method, Presolve, MIPFocus = "NonConvex", "Seed", "Method", "Presolve", "MIPFocus"
        MIPGapAbs, IntFeasTol, FeasibilityTol, OptimalityTol = "MIPGapAbs", "IntFeasTol", "FeasibilityTol", "OptimalityTol"
        DualReductions, InfUnbdInfo, LogFile, SolutionLimit = "DualReductions", "InfUnbdInfo", "LogFile", "SolutionLimit"

    class Callback:
        POLLING, PRESOLVE, SIMPLEX, MIP, MIPSOL, MIPNODE, MESSAGE, BARRIER = 0, 1, 2, 3, 4, 5, 6, 7


GRB.status = GRB.Status
GRB.attr = GRB.Attr
GRB.param = GRB.Param
GRB.callback = GRB.Callback

_STATUS_CODES = {"optimal": GRB.OPTIMAL, "infeasible": GRB.INFEASIBLE, "unbounded": GRB.UNBOUNDED,
                 "infeasible_or_unbounded": GRB.INF_OR_UNBD, "time_limit_feasible": GRB.TIME_LIMIT,
                 "time_limit_no_solution": GRB.TIME_LIMIT}


class _Gurobi:
    """gurobipy.gurobi: the library's version and platform."""

    @staticmethod
    def version():
        return (12, 0, 0)

    @staticmethod
    def platform():
        return "linux64"


gurobi = _Gurobi()


def gurobi_version():  # older spelling
    return gurobi.version()


# --- parameters ----------------------------------------------------------------------------

_PARAM_DEFAULTS = {"OutputFlag": 1, "LogToConsole": 1, "TimeLimit": _INF, "MIPGap": 1e-4, "Threads": 0}


class _Params:
    """Model.Params: any name may be set (Gurobi has hundreds; trex acts on TimeLimit,
    OutputFlag and LogToConsole); reading an unset one gives its default, or 0."""

    def __init__(self, values=None):
        object.__setattr__(self, "_values", dict(_PARAM_DEFAULTS))
        if values:
            self._values.update(values)

    def _key(self, name):
        name = str(name).split(".")[-1]
        for k in self._values:
            if k.lower() == name.lower():
                return k
        return name

    def __getattr__(self, name):
        return self._values.get(self._key(name), 0)

    def __setattr__(self, name, value):
        self._values[self._key(name)] = value


class Env:
    """An environment holds parameters that models created with it start from. There is no
    licence to start, so start() and close() only record the state."""

    def __init__(self, logfilename="", empty=False, params=None, **kwargs):
        self._params = dict(params or {})
        self._closed = False

    def setParam(self, name, value):
        self._params[str(name).split(".")[-1]] = value

    def getParam(self, name):
        return self._params.get(str(name).split(".")[-1], _PARAM_DEFAULTS.get(name, 0))

    def start(self):
        return self

    def close(self):
        self._closed = True

    dispose = close

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()
        return False


_default_env = Env()


def setParam(name, value):
    _default_env.setParam(name, value)


def resetParams():
    _default_env._params.clear()


def disposeDefaultEnv():
    pass


# --- the model -----------------------------------------------------------------------------

def _unsupported(what):
    def f(*a, **k):
        raise _Unsupported(10003, "%s is not supported by trex" % what)
    return f


class Model(_core.ModelCore):
    _api_name = "gurobi"

    def __init__(self, name="", env=None):
        _core.ModelCore.__init__(self, name)
        self.__dict__["Params"] = _Params((env or _default_env)._params)

    def __setattr__(self, name, value):
        key = name.lower()
        # Each value checked before the model changes (_changed); a new name keeps the solution.
        if key == "modelsense":
            value = int(value)
            self._changed()
            self._sense = value
        elif key == "modelname":
            value = str(value)
            self._changed(problem=False)
            self._name = value
        elif key == "objcon":
            value = _num(value)
            self._changed()
            self._objcon = value
        elif name.startswith("_") or name in ("Params",):
            object.__setattr__(self, name, value)
        else:
            raise GurobiError(10003, "cannot set model attribute '%s'" % name)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    @property
    def params(self):
        return self.Params

    # variables
    def addVar(self, lb=0.0, ub=_INF, obj=0.0, vtype=GRB.CONTINUOUS, name="", column=None):
        if column is not None:
            raise _Unsupported(10003, "addVar(column=...) is not supported by trex")
        if str(vtype).upper()[:1] in ("S", "N"):
            raise _Unsupported(10003, "semi-continuous and semi-integer variables are not supported by trex")
        return self._new_var(lb, ub, obj, vtype, name)

    def addVars(self, *indices, lb=0.0, ub=_INF, obj=0.0, vtype=GRB.CONTINUOUS, name=""):
        return self._new_vars(indices, lb, ub, obj, vtype, name)

    def addMVar(self, *a, **k):
        raise _Unsupported(10003, "the matrix API (addMVar) is not supported by trex")

    def getVars(self):
        return self._active_vars()

    def getVarByName(self, name):
        return self._var_by_name(name)

    # constraints
    def addConstr(self, constr=None, name="", *args, **kwargs):
        if "lhs" in kwargs:
            return self._add_constr(kwargs["lhs"], kwargs.get("sense"), kwargs.get("rhs"), kwargs.get("name", name))
        if args:  # legacy addConstr(lhs, sense, rhs, name)
            return self._add_constr(constr, name, args[0], args[1] if len(args) > 1 else kwargs.get("name", ""))
        if not isinstance(constr, (TempConstr, bool)) and type(constr).__name__ != "bool_":
            raise GurobiError(10003, "Invalid argument to Model.addConstr (a constraint such as x + y <= 1 is expected)")
        return self._add_constr(constr, None, None, kwargs.get("name", name))

    def addLConstr(self, lhs, sense=None, rhs=None, name=""):
        if isinstance(lhs, TempConstr):
            return self._add_constr(lhs, None, None, sense if isinstance(sense, str) and name == ""
                                    and sense not in ("<", ">", "=", "<=", ">=", "==") else name)
        return self._add_constr(lhs, sense, rhs, name)

    addQConstr = addConstr

    def addRange(self, expr, lower, upper, name=""):
        a = self._add_constr(expr, ">", lower, name)
        self._add_constr(expr, "<", upper, (name + "_ub") if name else "")
        return a

    def addConstrs(self, generator, name=""):
        return self._add_constrs(generator, name)

    def getConstrs(self):
        return self._active_constrs()

    def getQConstrs(self):
        return [c for c in self._active_constrs() if self._crec[c._index]["quad"]]

    def getConstrByName(self, name):
        for c in self._active_constrs():
            if self._crec[c._index]["name"] == name:
                return c
        return None

    def getQCRow(self, constr):
        q = QuadExpr(self.getRow(constr))
        q._qterms = list(self._crec[constr._index]["quad"])
        return q

    def remove(self, item):
        self._remove(item)

    # objective
    def setObjective(self, expr, sense=None):
        self._set_objective(expr, sense)

    def getObjective(self, index=None):
        return self._objective()

    setObjectiveN = _unsupported("a multi-objective model (setObjectiveN)")

    # parameters and attributes
    def setParam(self, name, value):
        setattr(self.Params, str(name).split(".")[-1], value)

    def getParamInfo(self, name):
        v = getattr(self.Params, name)
        return (name, type(v), v, v, v, v)

    def getAttr(self, name, objs=None):
        """One attribute of the model, or of each of `objs`: a list for a list, a dict with the
        same keys for a dict (a tupledict stays a tupledict), as gurobipy returns them."""
        if objs is None:
            return getattr(self, name)
        if isinstance(objs, dict):
            out = tupledict() if isinstance(objs, tupledict) else {}
            for k, o in objs.items():
                out[k] = o.getAttr(name)
            return out
        return [o.getAttr(name) for o in objs]

    def setAttr(self, name, objs, values=None):
        if values is None:
            setattr(self, name, objs)
            return
        if isinstance(objs, dict):
            for k, o in objs.items():
                o.setAttr(name, values[k] if isinstance(values, dict) else values)
        else:
            if isinstance(values, (int, float, str)):
                values = [values] * len(objs)
            for o, v in zip(objs, values):
                o.setAttr(name, v)

    def update(self):
        pass

    def reset(self, clearall=0):
        self._result = None

    def dispose(self):
        pass

    def close(self):
        pass

    def terminate(self):
        pass

    def copy(self):
        raise _Unsupported(10003, "Model.copy is not supported by trex")

    def __getattr__(self, name):
        key = name.lower()
        r = self._result
        if key == "modelsense":
            return self._sense
        if key == "modelname":
            return self._name
        if key == "numvars":
            return len(self._active_vars())
        if key == "numconstrs":
            return sum(1 for c in self._active_constrs() if not self._crec[c._index]["quad"])
        if key == "numqconstrs":
            return sum(1 for c in self._active_constrs() if self._crec[c._index]["quad"])
        if key == "numsos":
            return sum(1 for s in self._sos if not s["gone"])
        if key == "numgenconstrs":
            return sum(1 for g in self._gen if not g["gone"])
        if key == "numintvars":
            return sum(1 for v in self._active_vars() if self._vrec[v._index][3] != "C")
        if key == "numbinvars":
            return sum(1 for v in self._active_vars() if self._vrec[v._index][3] == "B")
        if key == "numnzs":
            return sum(self.getRow(c).size() for c in self._active_constrs())
        if key == "numobj":
            return 1
        if key == "objcon":
            return self._objcon
        if key == "status":
            return GRB.LOADED if r is None else _STATUS_CODES.get(r["status"], GRB.NUMERIC)
        if key == "solcount":
            return 1 if self._has_solution() else 0
        if key == "runtime":
            return 0.0 if r is None else r.get("seconds", 0.0)
        if key in ("objval", "objbound", "objboundc", "poolobjval"):
            return self._objval(name)
        if key == "mipgap":
            if not self._has_solution():
                raise _AttrError(10005, "Unable to retrieve attribute '%s'" % name)
            return 0.0
        if key in ("itercount", "baritercount", "nodecount"):
            return 0.0
        if key == "ismip":
            return int(any(self._vrec[v._index][3] != "C" for v in self._active_vars()))
        if key == "isqp":
            return int(bool(self._objq))
        if key == "isqcp":
            return int(any(self._crec[c._index]["quad"] for c in self._active_constrs()))
        if key == "ismultiobj":
            return 0
        if key == "fingerprint":
            return hash(str(self._to_json())) & 0x7FFFFFFF
        raise AttributeError("'Model' object has no attribute '%s'" % name)

    def computeIIS(self):
        raise _Unsupported(10003, "computeIIS is not supported by trex (it finds no irreducible infeasible subsystem)")

    # General constraints (Gurobi reference manual, "Model.addGenConstrXxx()"): stated to trex's
    # solvers as linear rows over new binaries (trex_modeling/general.py).
    def addGenConstrMax(self, resvar, vars, constant=None, name=""):
        return self._add_general("MAX", resvar, _gen_args(vars), constant, name)

    def addGenConstrMin(self, resvar, vars, constant=None, name=""):
        return self._add_general("MIN", resvar, _gen_args(vars), constant, name)

    def addGenConstrAbs(self, resvar, argvar, name=""):
        return self._add_general("ABS", resvar, [argvar], None, name)

    def addGenConstrAnd(self, resvar, vars, name=""):
        return self._add_general("AND", resvar, _gen_args(vars), None, name)

    def addGenConstrOr(self, resvar, vars, name=""):
        return self._add_general("OR", resvar, _gen_args(vars), None, name)

    def addGenConstrIndicator(self, binvar, binval, lhs, sense=None, rhs=None, name=""):
        return self._add_indicator(binvar, binval, lhs, sense, rhs, name)

    def addSOS(self, type, vars, wts=None):
        return self._add_sos(type, vars, wts)

    def getGenConstrs(self):
        from trex_modeling.general import GenConstr
        return [GenConstr(self, k) for k, g in enumerate(self._gen) if not g["gone"]]

    def getSOSs(self):
        from trex_modeling.general import SOS
        return [SOS(self, k) for k, g in enumerate(self._sos) if not g["gone"]]

    addGenConstrNorm = _unsupported("norm general constraints (addGenConstrNorm)")
    addGenConstrPWL = addGenConstrExp = addGenConstrLog = addGenConstrPow = _unsupported("nonlinear general constraints")
    addGenConstrSin = addGenConstrCos = addGenConstrPoly = addGenConstrLogistic = _unsupported("nonlinear general constraints")
    cbGet = cbGetSolution = cbLazy = cbCut = cbSetSolution = _unsupported("callbacks")

    # files
    def write(self, filename):
        self._write(filename)

    def printStats(self):
        print("Statistics for model %s: %d variables, %d constraints" % (self._name, self.NumVars, self.NumConstrs))

    def display(self):
        print(self._lp_text())

    def printAttr(self, name, filter="*"):
        for v in self.getVars():
            print("%s %s" % (v.VarName, v.getAttr(name)))

    # solving
    def optimize(self, callback=None):
        if callback is not None:
            raise _Unsupported(10003, "callbacks are not supported by trex")
        limit = float(self.Params.TimeLimit or _INF)
        status = self._solve(limit if limit < 1e9 else None)
        if status not in _STATUS_CODES:
            raise GurobiError(10001, "trex could not solve the model: %s" % (self._result.get("message") or status))
        if int(self.Params.OutputFlag) and int(self.Params.LogToConsole):
            r = self._result
            print("trex: %s%s" % (status, "" if r["x"] is None else ", objective %.12g" % r["objective"]))


def _gen_args(vars):
    return list(vars.values()) if isinstance(vars, dict) else list(vars)


# Gurobi's general-constraint helpers (reference manual, "max_()", "min_()", "abs_()", "and_()",
# "or_()"): `m.addConstr(z == max_(x, y, constant=3))`.
def max_(*args, constant=None):
    from trex_modeling.general import gen_max_min
    return gen_max_min("MAX", args, constant)


def min_(*args, constant=None):
    from trex_modeling.general import gen_max_min
    return gen_max_min("MIN", args, constant)


def abs_(arg):
    from trex_modeling.general import gen_abs
    return gen_abs(arg)


def and_(*args):
    from trex_modeling.general import gen_logic
    return gen_logic("AND", args)


def or_(*args):
    from trex_modeling.general import gen_logic
    return gen_logic("OR", args)


def read(filename, env=None):
    """A model from an LP file (the format Gurobi and Model.write produce); .mps is refused."""
    filename = str(filename)
    m = Model(_os.path.splitext(_os.path.basename(filename))[0], env)
    if filename.lower().endswith(".lp"):
        from trex_modeling.lp_reader import read_lp  # only harnesses read files back
        try:
            read_lp(m, filename)
        except OSError as e:
            raise GurobiError(10012, "Unable to open file '%s' for input: %s" % (filename, e.strerror))
        return m
    raise _Unsupported(10012, "gurobipy.read: only .lp files are read by trex (got '%s')" % filename)


__all__ = ["GRB", "GurobiError", "Model", "Env", "Var", "Constr", "LinExpr", "QuadExpr", "TempConstr",
           "quicksum", "tupledict", "tuplelist", "multidict", "read", "setParam", "gurobi", "disposeDefaultEnv",
           "max_", "min_", "abs_", "and_", "or_"]
