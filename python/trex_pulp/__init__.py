"""PuLP's solve() through trex: a PuLP solver class that sends the problem to trex's solvers
the way gurobipy's optimize() does (trex_modeling/solve.py: the sandbox channel inside `trex
eval`, the trex binary elsewhere), so no process is spawned.

install() makes it PuLP's default solver and the class behind PULP_CBC_CMD and COIN_CMD, so
`prob.solve()` and `prob.solve(PULP_CBC_CMD(msg=0))` both work unchanged; every other solver
class PuLP names (GLPK_CMD, GUROBI, CPLEX_CMD, ...) is replaced by one that is not available
and says so when asked to solve. Statuses and values are set as CBC's would be: LpStatus
Optimal 1, Infeasible -1, Unbounded -2, Not Solved 0 (a time limit without a solution);
variables' varValue, so value(prob.objective) works.
"""

from trex_modeling import INF, LinExpr, ModelCore

_CBC_NAMES = ("PULP_CBC_CMD", "COIN_CMD", "COINMP_DLL", "PULP_CHOCO_CMD")


def to_model(prob):
    """The trex model of a PuLP problem (variables in PuLP's order, rows in insertion order)."""
    m = ModelCore(getattr(prob, "name", "") or "")
    m._api_name = "pulp"
    vs = prob.variables()
    tv = {}
    for v in vs:
        lb = -INF if v.lowBound is None else float(v.lowBound)
        ub = INF if v.upBound is None else float(v.upBound)
        kind = "I" if v.cat == "Integer" else "C"
        if kind == "I" and lb == 0 and ub == 1:
            kind = "B"
        tv[v.name] = m._new_var(lb, ub, 0.0, kind, v.name)
    obj = prob.objective
    if obj is not None:
        m._set_objective(LinExpr([(float(c), tv[v.name]) for v, c in obj.items()]) + float(obj.constant or 0.0),
                         1 if prob.sense == 1 else -1)
    for name, c in prob.constraints.items():
        sense = {-1: "<", 0: "=", 1: ">"}[c.sense]
        m._add_constr(LinExpr([(float(k), tv[v.name]) for v, k in c.items()]), sense, -float(c.constant or 0.0), name)
    return m, tv


def _solver_classes():
    import pulp
    from pulp.apis.core import LpSolver, PulpSolverError

    class TREX_CMD(LpSolver):
        """trex's solvers behind PuLP's solver interface (takes CBC's arguments)."""

        name = "TREX_CMD"

        def __init__(self, mip=True, msg=True, timeLimit=None, gapRel=None, gapAbs=None, options=None,
                     warmStart=False, keepFiles=False, path=None, threads=None, **kwargs):
            LpSolver.__init__(self, mip=mip, msg=msg, timeLimit=timeLimit, options=options or [])
            self.timeLimit = timeLimit

        def available(self):
            return True

        def actualSolve(self, lp, **kwargs):
            m, tv = to_model(lp)
            status = m._solve(self.timeLimit)
            r = m._result
            if r["x"] is not None:
                for v in lp.variables():
                    v.varValue = m._value(tv[v.name])
            codes = {"optimal": (1, 1), "infeasible": (-1, -1), "unbounded": (-2, -2),
                     "infeasible_or_unbounded": (-1, -1), "time_limit_feasible": (1, 2),
                     "time_limit_no_solution": (0, 0)}
            if status not in codes:
                raise PulpSolverError("trex could not solve the problem: %s" % (r.get("message") or status))
            lp.assignStatus(*codes[status])
            if self.msg:
                print("trex: %s%s" % (status, "" if r["x"] is None else ", objective %.12g" % r["objective"]))
            return lp.status

    def refusing(solver_name):
        class NotAvailable(LpSolver):
            name = solver_name

            def __init__(self, *a, **k):
                LpSolver.__init__(self)

            def available(self):
                return False

            def actualSolve(self, lp, **kwargs):
                raise PulpSolverError("PuLP solver %s is not available inside trex (use the default or PULP_CBC_CMD)"
                                      % solver_name)

        NotAvailable.__name__ = solver_name
        return NotAvailable

    return pulp, TREX_CMD, refusing


def install():
    """Makes trex PuLP's solver in every module that holds a solver name. Returns the class."""
    import importlib
    pulp, TREX_CMD, refusing = _solver_classes()
    holders = [pulp, importlib.import_module("pulp.apis"), importlib.import_module("pulp.pulp")]
    names = set(_CBC_NAMES)
    for h in holders:
        for n in dir(h):
            obj = getattr(h, n)
            if isinstance(obj, type) and n.isupper() and n not in ("LpSolver", "LpSolver_CMD") and \
                    issubclass(obj, importlib.import_module("pulp.apis.core").LpSolver):
                names.add(n)
    default = TREX_CMD(msg=False)
    for h in holders:
        for n in names:
            if hasattr(h, n):
                setattr(h, n, TREX_CMD if n in _CBC_NAMES else refusing(n))
        if hasattr(h, "LpSolverDefault"):
            h.LpSolverDefault = default
        h.TREX_CMD = TREX_CMD
    # getSolver("PULP_CBC_CMD") looks solvers up by their `name` in this list.
    apis = importlib.import_module("pulp.apis")
    if hasattr(apis, "_all_solvers"):
        apis._all_solvers[:] = [type(c.name, (TREX_CMD,), {"name": c.name}) if c.name in _CBC_NAMES
                                else refusing(c.name) for c in apis._all_solvers]
    return TREX_CMD
