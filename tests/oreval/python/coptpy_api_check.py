"""The coptpy-compatible module on the calls ORLM's published programs make (Envr,
createModel, addVar/addVars, addConstr(s), quicksum, setObjective with COPT.MINIMIZE and
MAXIMIZE, solve, status against COPT's codes, objval, x.x / getInfo, setParam, addQConstr,
getVarByName, getValues), each on a small model with a known answer, in standalone mode. COPT's codes
are from the COPT 7 reference manual ("Constants: solution status"). Run by
tests/oreval/modeling_api_test.cc."""
import sys
import unittest

import coptpy as cp
from coptpy import COPT


def model():
    env = cp.Envr()
    m = env.createModel("m")
    m.setParam(COPT.Param.Logging, 0)
    return m


class Coptpy(unittest.TestCase):
    def test_status_codes_are_copts(self):
        self.assertEqual((COPT.OPTIMAL, COPT.INFEASIBLE, COPT.UNBOUNDED, COPT.INF_OR_UNB, COPT.TIMEOUT), (1, 2, 3, 4, 8))
        self.assertEqual((COPT.MINIMIZE, COPT.MAXIMIZE), (1, -1))

    def test_integer_program(self):
        m = model()
        x = m.addVar(lb=0, ub=10, vtype=COPT.INTEGER, name="x")
        y = m.addVar(vtype=COPT.CONTINUOUS, name="y")
        m.addConstr(x + 2 * y <= 7.5, name="c1")
        m.addConstr(x - y >= 1)
        m.setObjective(3 * x + 2 * y, sense=COPT.MAXIMIZE)
        self.assertEqual(m.status, COPT.UNSTARTED)
        m.solve()
        self.assertEqual(m.status, COPT.OPTIMAL)
        self.assertAlmostEqual(m.objval, 21.5)
        self.assertEqual(x.x, 7.0)
        self.assertAlmostEqual(y.getInfo(COPT.Info.Value), 0.25)
        self.assertEqual(x.getName(), "x")
        self.assertIs(m.getVarByName("y"), y)
        self.assertEqual(m.getAttr(COPT.Attr.BestObj), m.objval)
        # Model attributes are read case-blind, as COPT does (ORLM programs write m.Status, m.ObjVal).
        self.assertEqual((m.Status, m.ObjVal, m.objVal, m.LpObjval), (m.status, m.objval, m.objval, m.objval))

    def test_addvars_and_addconstrs(self):
        m = model()
        x = m.addVars(2, 3, vtype=COPT.BINARY, nameprefix="x")
        m.addConstrs((x.sum(i, "*") == 1 for i in range(2)), nameprefix="one")
        m.addConstr(cp.quicksum(x[i, j] for i in range(2) for j in range(3)) <= 2)
        m.setObjective(cp.quicksum((i + j + 1) * x[i, j] for i in range(2) for j in range(3)), COPT.MINIMIZE)
        m.solve()
        self.assertEqual((m.status, m.objval), (COPT.OPTIMAL, 3.0))
        self.assertEqual(x[1, 0].name, "x(1,0)")
        self.assertEqual(m.getConstrs()[0].getName(), "one(0)")
        # Model-level value reads: getValues (all columns, or a list) and getInfo over a tupledict.
        values = m.getValues()
        self.assertEqual(len(values), 6)
        self.assertEqual(sum(values), 2.0)
        self.assertEqual(m.getValues([x[0, 0], x[1, 0]]), [1.0, 1.0])
        info = m.getInfo(COPT.Info.Value, x)
        self.assertEqual((info[0, 0], info[1, 0], info[0, 1]), (1.0, 1.0, 0.0))

    def test_infeasible_and_unbounded(self):
        m = model()
        z = m.addVar(ub=1)
        m.addConstr(z >= 2)
        m.setObjective(z, COPT.MAXIMIZE)
        m.solve()
        self.assertEqual(m.status, COPT.INFEASIBLE)
        with self.assertRaises(cp.CoptError):
            m.objval
        u = model()
        w = u.addVar()
        u.setObjective(w, COPT.MAXIMIZE)
        u.solve()
        self.assertIn(u.status, (COPT.UNBOUNDED, COPT.INF_OR_UNB))

    def test_sense_letters_and_quadratic_rows(self):
        m = model()
        x = m.addVar(lb=-5, ub=5, name="x")
        y = m.addVar(lb=-5, ub=5, name="y")
        m.addConstr(x + y, COPT.GREATER_EQUAL, 1)
        m.addQConstr(x * x + y * y <= 4)
        m.setObjective(x + y, COPT.MAXIMIZE)
        m.setParam(COPT.Param.TimeLimit, 60)
        m.solve()
        self.assertEqual(m.status, COPT.OPTIMAL)
        self.assertAlmostEqual(m.objval, 2 * 2 ** 0.5, places=4)

    def test_refused_calls_name_themselves(self):
        m = model()
        x = m.addVar()
        for call, word in ((lambda: cp.max_(x, 1), "max_"), (lambda: m.addSOS(1, [x]), "addSOS"),
                           (lambda: m.computeIIS(), "computeIIS")):
            with self.assertRaises(cp.CoptError) as e:
                call()
            self.assertIn(word, str(e.exception))

    def test_shares_the_gurobipy_core(self):
        import gurobipy
        self.assertIs(cp.LinExpr, gurobipy.LinExpr)
        self.assertIs(cp.CoptError, gurobipy.GurobiError)



def solved():
    m = model()
    x = m.addVar(ub=4, name="x")
    m.addConstr(x >= 1, name="c")
    m.setObjective(2 * x, COPT.MINIMIZE)
    m.solve()
    return m, x


class CoptpySetters(unittest.TestCase):
    """coptpy's own model setters (setObjSense, setObjConst, model.ObjSense = ...) share the
    core's rule: a change reaches the next record and drops the solution; a value that is
    refused changes nothing."""

    def test_a_setter_reaches_the_record(self):
        def setobjsense(m): m.setObjSense(COPT.MAXIMIZE)
        def objsense_attr(m): m.ObjSense = COPT.MAXIMIZE
        def setobjconst(m): m.setObjConst(2.5)
        for change in (setobjsense, objsense_attr, setobjconst):
            with self.subTest(change.__name__):
                m, x = solved()
                self.assertEqual(m.status, COPT.OPTIMAL)
                before = m._to_json()
                change(m)
                self.assertNotEqual(m._to_json(), before)
                self.assertEqual(m._to_json(), m._record())
                self.assertEqual(m.status, COPT.UNSTARTED)
                m.solve()
                self.assertEqual(m.objval, {"setobjconst": 4.5}.get(change.__name__, 8.0))

    def test_a_refused_value_changes_nothing(self):
        def setobjsense(m): m.setObjSense("max")
        def objsense_attr(m): m.ObjSense = "max"
        def setobjconst(m): m.setObjConst(float("nan"))
        def addconstr_nan(m): m.addConstr(m.getVars()[0] * 1e200 * 1e200 * 0 <= 1)
        for call in (setobjsense, objsense_attr, setobjconst, addconstr_nan):
            with self.subTest(call.__name__):
                m, x = solved()
                before = m._to_json()
                with self.assertRaises(Exception):
                    call(m)
                self.assertEqual(m._record(), before)
                self.assertEqual(m._to_json(), before)
                self.assertEqual((m.status, m.objval, x.x), (COPT.OPTIMAL, 2.0, 1.0))


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if r.wasSuccessful() and r.testsRun > 0 else 1)
