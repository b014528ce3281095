"""The gurobipy-compatible module against what Gurobi documents (Gurobi 12 reference manual,
Python API, cited per test), in standalone mode: solves go to the trex binary (TREX_BINARY).
Run by tests/oreval/modeling_api_test.cc; each test is one behaviour a harness or a published
OR-LLM program relies on."""
import math
import os
import sys
import tempfile
import unittest

import gurobipy as gp
from gurobipy import GRB


def small():
    m = gp.Model("small")
    m.Params.OutputFlag = 0
    x = m.addVars(3, name="x")
    m.addConstr(x.sum() >= 1, "cover")
    m.setObjective(3 * x[0] + 2 * x[1] + x[2], GRB.MINIMIZE)
    return m, x


class MissingApi(unittest.TestCase):
    def test_read_returns_the_model_written(self):
        # gurobipy.read(filename, env=None) reads a model from a file (manual: "read()").
        m, x = small()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.lp")
            m.write(p)
            r = gp.read(p)
        self.assertEqual((r.NumVars, r.NumConstrs), (3, 1))
        self.assertEqual([v.VarName for v in r.getVars()], ["x[0]", "x[1]", "x[2]"])
        self.assertEqual([v.Obj for v in r.getVars()], [3.0, 2.0, 1.0])
        r.Params.OutputFlag = 0
        r.optimize()
        self.assertEqual(r.ObjVal, 1.0)

    def test_read_names_file_and_line_of_a_bad_file(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.lp")
            with open(p, "w") as f:
                f.write("Minimize\n x\nSubject To\n c: x + y\nEnd\n")
            with self.assertRaises(gp.GurobiError) as e:
                gp.read(p)
            self.assertIn("bad.lp, line 4", str(e.exception))
            with self.assertRaises(gp.GurobiError):
                gp.read(os.path.join(d, "missing.lp"))

    def test_env_close_and_context(self):
        # The report's harness: `with gp.Env(empty=True) as env: ... env.start(); gp.read(p, env)
        # ... finally: env.close()`.
        with gp.Env(empty=True) as env:
            env.setParam("LogToConsole", 0)
            env.start()
            m = gp.Model(env=env)
            self.assertEqual(m.Params.LogToConsole, 0)
            env.close()

    def test_getrow_merges_terms(self):
        # Model.getRow returns the row's LinExpr; Gurobi stores one coefficient per variable.
        m = gp.Model()
        x, y = m.addVar(name="x"), m.addVar(name="y")
        c = m.addConstr(x + 2 * y + 3 * x - 2 * y <= 4)
        row = m.getRow(c)
        self.assertEqual(row.size(), 1)
        self.assertIs(row.getVar(0), x)
        self.assertEqual(row.getCoeff(0), 4.0)
        self.assertEqual(m.getCoeff(c, x), 4.0)

    def test_gurobi_version(self):
        self.assertEqual(len(gp.gurobi.version()), 3)
        self.assertEqual(gp.gurobi.version()[0], 12)


class WrongBefore(unittest.TestCase):
    def test_remove_drops_the_row(self):
        # Model.remove: "Remove a variable, linear constraint, ... from the model".
        m, x = small()
        c = m.addConstr(x[0] <= 5, "ub")
        m.remove(c)
        m.update()
        self.assertEqual(m.NumConstrs, 1)
        self.assertEqual([k.ConstrName for k in m.getConstrs()], ["cover"])
        m.remove(x[2])
        self.assertEqual(m.NumVars, 2)
        self.assertEqual(m.getRow(m.getConstrs()[0]).size(), 2)
        m.optimize()
        self.assertEqual(m.ObjVal, 2.0)  # x[2] (cost 1) is gone

    def test_hasattr_objval_before_solve_is_false(self):
        # Attribute access without a value raises AttributeError "Unable to retrieve attribute".
        m, x = small()
        self.assertFalse(hasattr(m, "ObjVal"))
        self.assertFalse(hasattr(x[0], "X"))
        with self.assertRaises(gp.GurobiError):
            m.ObjVal
        m.optimize()
        self.assertTrue(hasattr(m, "ObjVal"))

    def test_zero_rhs_is_plus_zero(self):
        m = gp.Model()
        x, y = m.addVar(name="x"), m.addVar(name="y")
        c = m.addConstr(x - y == 0)
        d = m.addConstr(x <= y)
        self.assertEqual(math.copysign(1.0, c.RHS), 1.0)
        self.assertEqual(math.copysign(1.0, d.RHS), 1.0)
        self.assertNotIn("-0", m._lp_text())

    def test_var_obj_follows_setobjective(self):
        # setObjective replaces the objective; each variable's Obj attribute is its coefficient.
        m = gp.Model()
        x, y = m.addVar(obj=7, name="x"), m.addVar(name="y")
        m.setObjective(2 * x + 3 * y + 3 * y)
        self.assertEqual((x.Obj, y.Obj), (2.0, 6.0))
        m.setObjective(y)
        self.assertEqual((x.Obj, y.Obj), (0.0, 1.0))
        x.Obj = 5
        self.assertEqual(m.getObjective().size(), 2)

    def test_getattr_of_a_tupledict_is_a_dict(self):
        # Model.getAttr(attr, objs): "a dict when objs is a dict (tupledict)", else a list.
        m, x = small()
        m.optimize()
        vals = m.getAttr("X", x)
        self.assertIsInstance(vals, gp.tupledict)
        self.assertEqual(sorted(vals), [0, 1, 2])
        self.assertEqual(vals[2], 1.0)
        self.assertEqual(m.getAttr(GRB.Attr.X, x.values()), [0.0, 0.0, 1.0])


class LpWriter(unittest.TestCase):
    def lp(self, build):
        m = gp.Model("w")
        build(m)
        return m._lp_text().split("\n", 2)[2]

    def test_terms_merged_and_cancelled(self):
        def b(m):
            p, q = m.addVar(name="p"), m.addVar(name="q")
            m.addConstr(0.5 * p - 1 * p + q - q <= 3, "c")
        self.assertIn(" c: - 0.5 p <= 3\n", self.lp(b))

    def test_empty_row_has_no_placeholder(self):
        def b(m):
            m.addVar(name="p")
            m.addConstr(gp.quicksum([]) <= 5, "e")
        self.assertIn(" e: <= 5\n", self.lp(b))

    def test_objective_constant_is_a_constant_term(self):
        def b(m):
            p = m.addVar(name="p")
            m.setObjective(2 * p + 7)
        text = self.lp(b)
        self.assertIn("  2 p + 7 Constant\n", text)
        self.assertIn("Bounds\n Constant = 1\n", text)

    def test_products_merged(self):
        def b(m):
            x, y = m.addVar(name="x"), m.addVar(name="y")
            m.setObjective(x * y + y * x + x * x)
        self.assertIn("[ 2 x ^2 + 4 x * y ] / 2", self.lp(b))  # column order

    def test_number_format(self):
        # "%g" when it gives the double back, else 16 significant digits from 0.1 up, 15 below,
        # "%.16e" outside 1e-4..1e6 (read off Gurobi's files: the Bench4Opt reference LPs).
        from trex_modeling.lp_writer import gurobi_number as g
        self.assertEqual(g(9.12), "9.12")
        self.assertEqual(g(77.080444561), "77.08044456099999")
        self.assertEqual(g(66445.1043), "66445.10430000001")
        self.assertEqual(g(0.5502913905933789), "0.5502913905933789")
        self.assertEqual(g(0.066248712943843), "0.066248712943843")
        self.assertEqual(g(0.0695551488), "0.0695551488")
        self.assertEqual(g(0.1), "0.1")
        self.assertEqual(g(-0.0), "0")
        self.assertEqual(g(1e6), "1e+06")
        self.assertEqual(g(999998.33), "999998.33")
        self.assertEqual(g(1.5664279467186848e-04), "1.5664279467186848e-04")
        self.assertEqual(g(0.0049590155021203), "0.0049590155021203")
        self.assertEqual(float(g(1 / 3)), 1 / 3)

    def test_bounds_and_kinds(self):
        def b(m):
            m.addVar(lb=-GRB.INFINITY, name="f")
            m.addVar(ub=4, vtype=GRB.INTEGER, name="i")
            m.addVar(lb=2, ub=2, name="k")
            m.addVar(lb=-1, ub=1, name="r")
            m.addVar(vtype=GRB.BINARY, name="b")
        text = self.lp(b)
        self.assertIn("Bounds\n f free\n i <= 4\n k = 2\n -1 <= r <= 1\nBinaries\n b\nGenerals\n i\nEnd\n", text)

    def test_mps_written(self):
        m, x = small()
        with tempfile.TemporaryDirectory() as d:
            m.write(os.path.join(d, "m.mps"))
            with open(os.path.join(d, "m.mps")) as f:
                text = f.read()
        self.assertTrue(text.startswith("NAME small\nROWS\n N  OBJ\n G  cover\nCOLUMNS\n"))
        self.assertTrue(text.endswith("ENDATA\n"))


class Surface(unittest.TestCase):
    def test_addvars_index_forms(self):
        m = gp.Model()
        a = m.addVars(2, 3)
        b = m.addVars([(1, "x"), (2, "y")], name="b")
        c = m.addVars(gp.tuplelist([(1, 2), (3, 4)]), ["p", "q"], name="c")
        d = m.addVars(["u", "v"], lb=[1, 2], ub={"u": 5, "v": 6}, name="d")
        self.assertEqual(sorted(a), [(i, j) for i in range(2) for j in range(3)])
        self.assertEqual(b[2, "y"].VarName, "b[2,y]")
        self.assertIn((3, 4, "q"), c)
        self.assertEqual((d["v"].LB, d["v"].UB), (2.0, 6.0))

    def test_tupledict_select_sum_prod(self):
        m = gp.Model()
        x = m.addVars([(1, 1), (1, 2), (2, 1)], name="x")
        self.assertEqual(len(x.select(1, "*")), 2)
        self.assertEqual(x.sum("*", 1).size(), 2)
        e = x.prod({(1, 1): 2, (2, 1): 3})
        self.assertEqual(sorted(e.getCoeff(i) for i in range(e.size())), [2.0, 3.0])
        keys, cost = gp.multidict({"a": 1, "b": 2})
        self.assertEqual((list(keys), cost["b"]), (["a", "b"], 2))

    def test_every_sense_form(self):
        m = gp.Model()
        x = m.addVar(name="x")
        m.addConstr(x <= 1)
        m.addConstr(1 >= x)
        m.addConstr(x, GRB.LESS_EQUAL, 1, "legacy")
        m.addLConstr(x, "<=", 1)
        m.addLConstr(gp.LinExpr([1.0], [x]), GRB.GREATER_EQUAL, 0)
        m.addConstr(lhs=x, sense="==", rhs=1)
        m.addRange(x, 0, 1, "r")
        self.assertEqual([c.Sense for c in m.getConstrs()], ["<", "<", "<", "<", ">", "=", ">", "<"])

    def test_addconstrs_keys_and_names(self):
        m = gp.Model()
        x = m.addVars(2, 2, name="x")
        cs = m.addConstrs((x[i, j] <= i + j for i in range(2) for j in range(2)), name="c")
        self.assertEqual(sorted(cs), [(0, 0), (0, 1), (1, 0), (1, 1)])
        self.assertEqual(cs[1, 0].ConstrName, "c[1,0]")

    def test_quadratic_objective_solves(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        x = m.addVar(lb=-10, name="x")
        m.setObjective(x * x - 4 * x + 1)
        m.optimize()
        self.assertEqual(m.Status, GRB.OPTIMAL)
        self.assertAlmostEqual(m.ObjVal, -3.0, places=5)
        self.assertEqual(m.IsQP, 1)

    def test_statuses_and_counts(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        x = m.addVar(name="x")
        m.setObjective(x, GRB.MAXIMIZE)
        self.assertEqual(m.Status, GRB.LOADED)
        m.optimize()
        self.assertIn(m.Status, (GRB.UNBOUNDED, GRB.INF_OR_UNBD))
        self.assertEqual(m.SolCount, 0)
        m.addConstr(x <= 2)
        m.optimize()
        self.assertEqual((m.Status, m.SolCount, m.ObjVal, x.X), (GRB.OPTIMAL, 1, 2.0, 2.0))
        self.assertEqual(m.getConstrs()[0].Slack, 0.0)
        self.assertGreaterEqual(m.Runtime, 0.0)

    def test_refused_calls_name_themselves(self):
        m = gp.Model()
        x, y = m.addVar(), m.addVar()
        for call, word in ((lambda: m.addGenConstrPWL(x, y, [0, 1], [0, 1]), "nonlinear general constraints"),
                           (lambda: m.addGenConstrNorm(x, [y], 2), "addGenConstrNorm"),
                           (lambda: m.computeIIS(), "computeIIS"),
                           (lambda: m.optimize(lambda model, where: None), "callbacks")):
            with self.assertRaises(gp.GurobiError) as e:
                call()
            self.assertIn(word, str(e.exception))

    def test_params_and_setparam(self):
        m = gp.Model()
        m.setParam("TimeLimit", 30)
        m.setParam(GRB.Param.MIPGap, 0.01)
        m.Params.Threads = 2
        self.assertEqual((m.Params.TimeLimit, m.Params.MIPGap, m.Params.threads), (30, 0.01, 2))


class Duals(unittest.TestCase):
    """Constr.Pi and Var.RC of an LP (Gurobi reference manual, "Pi": the constraint dual value,
    >= 0 for a >= row and <= 0 for a <= row, the senses reversed for a maximisation, "only
    available for continuous models"; "RC": the reduced cost). Each value is also checked as
    what it means: the objective's change per unit of right-hand side (or of a variable moved
    off its bound), by solving the model again with that change."""

    def lp(self, sense):
        # JuMP's Gurobi example (discourse.julialang.org "Dual vs shadow price"): max 5 x0 +
        # 12 x1 + 4 x2, c1: x0 + 2 x1 + x2 <= 10, c2: 2 x0 - x1 + 3 x2 = 8; optimum 54.8.
        m = gp.Model()
        m.Params.OutputFlag = 0
        x = m.addVars(3, name="x")
        m.addConstr(x[0] + 2 * x[1] + x[2] <= 10, "c1")
        m.addConstr(2 * x[0] - x[1] + 3 * x[2] == 8, "c2")
        s = 1 if sense == GRB.MAXIMIZE else -1
        m.setObjective(s * (5 * x[0] + 12 * x[1] + 4 * x[2]), sense)
        m.optimize()
        return m, x

    def test_pi_and_rc_are_the_objective_s_rates_of_change(self):
        for sense in (GRB.MAXIMIZE, GRB.MINIMIZE):
            m, x = self.lp(sense)
            s = 1 if sense == GRB.MAXIMIZE else -1
            self.assertAlmostEqual(m.ObjVal, s * 54.8, places=9)
            c1, c2 = m.getConstrs()
            self.assertAlmostEqual(c1.Pi, s * 5.8, places=9)
            self.assertAlmostEqual(c2.Pi, s * -0.4, places=9)
            self.assertEqual(len(m.getAttr("Pi", m.getConstrs())), 2)
            rc = [v.RC for v in x.values()]
            for got, want in zip(rc, (0.0, 0.0, s * -0.6)):
                self.assertAlmostEqual(got, want, places=9)
            base, pis = m.ObjVal, [c1.Pi, c2.Pi]
            for c, pi in zip((c1, c2), pis):
                c.RHS += 1e-3
                m.optimize()
                self.assertAlmostEqual((m.ObjVal - base) / 1e-3, pi, places=6)
                c.RHS -= 1e-3
            x[2].LB = 1e-3  # x2 off its bound 0
            m.optimize()
            self.assertAlmostEqual((m.ObjVal - base) / 1e-3, rc[2], places=6)

    def test_signs_follow_the_manual_for_both_senses(self):
        for sense in (GRB.MINIMIZE, GRB.MAXIMIZE):
            m = gp.Model()
            m.Params.OutputFlag = 0
            a, b = m.addVar(name="a"), m.addVar(name="b")
            ge = m.addConstr(a + b >= 4)
            le = m.addConstr(a <= 3)
            slack = m.addConstr(a + 5 * b <= 100)
            m.setObjective(2 * a + 3 * b if sense == GRB.MINIMIZE else -2 * a - 3 * b, sense)
            m.optimize()
            flip = 1 if sense == GRB.MINIMIZE else -1
            self.assertAlmostEqual(ge.Pi, flip * 3.0, places=9)   # min: >= row, Pi >= 0
            self.assertAlmostEqual(le.Pi, flip * -1.0, places=9)  # min: <= row, Pi <= 0
            self.assertEqual(slack.Pi, 0.0)                       # not tight

    def test_hand_computed_and_from_the_one_solve(self):
        # tests/lp/lp_duals_test.cc derives these from the optimal basis. min 2x + 3y + 4z,
        # c1: x + y + z >= 4, c2: x - y = 1, c3: x + 2y <= 10: x = 2.5, y = 1.5, z = 0, Pi =
        # (2.5, -0.5, 0), RC_z = 1.5. max 3x + 2y + z, c1: x + y + z <= 6, c2: z - y >= 1, x <= 3:
        # Pi = (1.5, -0.5), RC_x = 1.5 (at its upper bound). trex's solve returns them: reading
        # them makes no second solve.
        import trex_modeling.solve as solve_mod
        calls = []
        real = solve_mod.solve
        solve_mod.solve = lambda *a, **k: calls.append(1) or real(*a, **k)
        try:
            for sense, want_pi, want_rc in ((GRB.MINIMIZE, (2.5, -0.5, 0.0), (0.0, 0.0, 1.5)),
                                            (GRB.MAXIMIZE, (1.5, -0.5), (1.5, 0.0, 0.0))):
                m = gp.Model()
                m.Params.OutputFlag = 0
                if sense == GRB.MINIMIZE:
                    x, y, z = m.addVar(name="x"), m.addVar(name="y"), m.addVar(name="z")
                    cs = [m.addConstr(x + y + z >= 4), m.addConstr(x - y == 1), m.addConstr(x + 2 * y <= 10)]
                    m.setObjective(2 * x + 3 * y + 4 * z, sense)
                else:
                    x, y, z = m.addVar(ub=3, name="x"), m.addVar(name="y"), m.addVar(name="z")
                    cs = [m.addConstr(x + y + z <= 6), m.addConstr(z - y >= 1)]
                    m.setObjective(3 * x + 2 * y + z, sense)
                del calls[:]
                m.optimize()
                for got, want in zip(m.getAttr("Pi", cs), want_pi):
                    self.assertAlmostEqual(got, want, places=9)
                for got, want in zip(m.getAttr(GRB.Attr.RC, [x, y, z]), want_rc):
                    self.assertAlmostEqual(got, want, places=9)
                self.assertEqual(len(calls), 1)
        finally:
            solve_mod.solve = real

    def test_no_duals_for_a_mip_or_before_a_solve(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        z = m.addVar(vtype=GRB.INTEGER, ub=3, name="z")
        c = m.addConstr(z <= 2.5)
        m.setObjective(z, GRB.MAXIMIZE)
        self.assertFalse(hasattr(c, "Pi"))
        m.optimize()
        self.assertFalse(hasattr(c, "Pi"))
        self.assertFalse(hasattr(z, "RC"))
        with self.assertRaises(gp.GurobiError):
            c.Pi


class GeneralConstraints(unittest.TestCase):
    """Gurobi reference manual (12.0), "General Constraints" and Model.addGenConstrXxx(): MAX,
    MIN, ABS, AND, OR and indicator constraints, also through max_(), min_(), abs_(), and_(),
    or_() and `(b == 1) >> (row)`; SOS constraints (Model.addSOS: type 1, at most one member
    non-zero; type 2, at most two, adjacent in the order of the weights). Each check solves in
    both objective directions, so a formulation that only bounds the result on one side fails."""

    def solve(self, m, obj, sense):
        m.setObjective(obj, sense)
        m.optimize()
        self.assertEqual(m.Status, GRB.OPTIMAL)
        return m.ObjVal

    def test_max_min_abs_equal_their_functions_either_way(self):
        for xv, yv in ((-2.0, 4.0), (3.0, 0.5), (-1.0, -2.5)):
            for sense in (GRB.MINIMIZE, GRB.MAXIMIZE):
                m = gp.Model()
                m.Params.OutputFlag = 0
                x = m.addVar(lb=-3, ub=5, name="x")
                y = m.addVar(lb=-3, ub=5, name="y")
                r = m.addVar(lb=-10, ub=10, name="r")
                mn = m.addVar(lb=-10, ub=10, name="mn")
                a = m.addVar(lb=-10, ub=10, name="a")
                r2 = m.addVar(lb=-10, ub=10, name="r2")
                m.addConstr(x == xv)
                m.addConstr(y == yv)
                m.addConstr(r == gp.max_(x, y, constant=1))
                m.addGenConstrMin(mn, [x, y], name="mn")
                m.addConstr(a == gp.abs_(x))
                m.addGenConstrMax(r2, [x, y], name="r2")
                self.solve(m, r + mn + a + r2, sense)
                self.assertAlmostEqual(r.X, max(xv, yv, 1), places=6)
                self.assertAlmostEqual(mn.X, min(xv, yv), places=6)
                self.assertAlmostEqual(a.X, abs(xv), places=6)
                self.assertAlmostEqual(r2.X, max(xv, yv), places=6)
                self.assertEqual((m.NumGenConstrs, m.NumVars), (4, 6))  # no helper variable shows

    def test_and_or_equal_their_functions_either_way(self):
        for b1v in (0, 1):
            for b2v in (0, 1):
                for sense in (GRB.MINIMIZE, GRB.MAXIMIZE):
                    m = gp.Model()
                    m.Params.OutputFlag = 0
                    b = m.addVars(4, vtype=GRB.BINARY, name="b")
                    m.addConstr(b[0] == b1v)
                    m.addConstr(b[1] == b2v)
                    m.addConstr(b[2] == gp.and_(b[0], b[1]))
                    m.addGenConstrOr(b[3], [b[0], b[1]])
                    self.solve(m, b[2] + b[3], sense)
                    self.assertEqual((b[2].X, b[3].X), (float(b1v and b2v), float(b1v or b2v)))

    def test_indicator_holds_only_when_its_binary_takes_its_value(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        x = m.addVar(ub=10, name="x")
        b = m.addVar(vtype=GRB.BINARY, name="b")
        m.addConstr((b == 1) >> (x <= 2), "ind")
        self.assertEqual(self.solve(m, x + 5 * b, GRB.MAXIMIZE), 10.0)  # b = 0, x = 10
        self.assertEqual(self.solve(m, x + 9 * b, GRB.MAXIMIZE), 11.0)  # b = 1, x = 2
        c = m.addVar(vtype=GRB.BINARY, name="c")
        m.addGenConstrIndicator(c, False, x, GRB.GREATER_EQUAL, 4)   # c = 0 -> x >= 4
        self.assertEqual(self.solve(m, x + 10 * c, GRB.MINIMIZE), 4.0)  # c = 0, x = 4
        self.assertEqual((x.X, c.X), (4.0, 0.0))
        self.assertEqual(self.solve(m, x + 3 * c, GRB.MINIMIZE), 3.0)   # c = 1, x = 0
        self.assertEqual((x.X, c.X), (0.0, 1.0))

    def test_sos_constraints(self):
        # Gurobi's example sos.py: maximize 2 x0 + x1 + x2, x0 <= 1, x1 <= 1, x2 <= 2, SOS1 {x0, x1}
        # and SOS1 {x0, x2} (weights 1, 2): optimum 3 (x0 = 0).
        m = gp.Model()
        m.Params.OutputFlag = 0
        x = m.addVars(3, ub=[1, 1, 2], obj=[-2, -1, -1], name="x")
        m.addSOS(GRB.SOS_TYPE1, [x[0], x[1]], [1, 2])
        m.addSOS(GRB.SOS_TYPE1, [x[0], x[2]], [1, 2])
        m.optimize()
        self.assertEqual((m.ObjVal, x[0].X, m.NumSOS), (-3.0, 0.0, 2))
        # SOS2 over four members (ordered by weight): only neighbours may both be non-zero.
        m = gp.Model()
        m.Params.OutputFlag = 0
        y = m.addVars(4, ub=1, name="y")
        m.addSOS(GRB.SOS_TYPE2, [y[0], y[1], y[2], y[3]], [1, 2, 3, 4])
        self.assertAlmostEqual(self.solve(m, y[0] + 0.1 * y[1] + y[2], GRB.MAXIMIZE), 1.1)
        s = m.getSOSs()[0]
        m.remove(s)
        self.assertAlmostEqual(self.solve(m, y[0] + 0.1 * y[1] + y[2], GRB.MAXIMIZE), 2.1)

    def test_an_infinite_bound_the_formulation_needs_is_refused_by_name(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        x, r = m.addVar(name="x"), m.addVar(name="r")  # x <= +infinity
        m.addConstr(r == gp.max_(x, constant=2), "mx")
        m.setObjective(r)
        with self.assertRaises(gp.GurobiError) as e:
            m.optimize()
        self.assertIn("mx", str(e.exception))
        self.assertIn("infinite", str(e.exception))

    def test_written_as_gurobi_lays_them_out_and_read_back(self):
        m = gp.Model("g")
        m.Params.OutputFlag = 0
        x = m.addVar(lb=-3, ub=5, name="x")
        r = m.addVar(lb=-10, ub=10, name="r")
        b = m.addVar(vtype=GRB.BINARY, name="b")
        m.addConstr(r == gp.max_(x, constant=1), "mx")
        m.addConstr((b == 1) >> (x + r <= 2), "ind")
        m.addSOS(GRB.SOS_TYPE1, [x, r], [1, 2])
        m.setObjective(r - x + b, GRB.MAXIMIZE)
        text = m._lp_text()
        self.assertIn("Subject To\n ind: b = 1 -> x + r <= 2\nBounds\n", text)
        self.assertIn("\nSOS\n s0: S1 :: x:1 r:2\nGeneral Constraints\n mx: r = MAX ( x , 1 )\nEnd\n", text)
        m.optimize()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "g.lp")
            m.write(p)
            back = gp.read(p)
            with self.assertRaises(gp.GurobiError):
                m.write(os.path.join(d, "g.mps"))
        back.Params.OutputFlag = 0
        self.assertEqual((back.NumGenConstrs, back.NumSOS, back.NumVars), (2, 1, 3))
        self.assertEqual([g.GenConstrType for g in back.getGenConstrs()], [GRB.GENCONSTR_INDICATOR, GRB.GENCONSTR_MAX])
        back.optimize()
        self.assertEqual(back.ObjVal, m.ObjVal)
        self.assertEqual(back._lp_text(), text)


class RecordFollowsEveryChange(unittest.TestCase):
    """The model's record (what model.write serialises and the runner hands to trex) is made
    once per state of the model: after a write, every change must still reach the next record."""

    def changes(self):
        # Each: a change a program can make after model.write, through the public API.
        def lb(m, x, c): x[0].LB = 2
        def ub(m, x, c): x[1].setAttr("UB", 7)
        def obj(m, x, c): x[2].Obj = 5
        def vtype(m, x, c): x[0].VType = GRB.INTEGER
        def varname(m, x, c): x[1].VarName = "renamed"
        def setattr_many(m, x, c): m.setAttr("LB", [x[0], x[1]], [1, 1])
        def addvar(m, x, c): m.addVar(name="late")
        def addconstr(m, x, c): m.addConstr(x[0] + x[2] <= 4, "late")
        def rhs(m, x, c): c.RHS = 3
        def sense(m, x, c): c.Sense = GRB.LESS_EQUAL
        def constrname(m, x, c): c.ConstrName = "other"
        def chgcoeff(m, x, c): m.chgCoeff(c, x[1], 9)
        def remove_var(m, x, c): m.remove(x[2])
        def remove_constr(m, x, c): m.remove(c)
        def objective(m, x, c): m.setObjective(x[0] - x[1], GRB.MAXIMIZE)
        def modelsense(m, x, c): m.ModelSense = GRB.MAXIMIZE
        def modelname(m, x, c): m.ModelName = "renamed"
        def objcon(m, x, c): m.ObjCon = 4.5
        return [lb, ub, obj, vtype, varname, setattr_many, addvar, addconstr, rhs, sense, constrname,
                chgcoeff, remove_var, remove_constr, objective, modelsense, modelname, objcon]

    def test_a_change_after_write_reaches_the_record(self):
        for change in self.changes():
            with self.subTest(change.__name__), tempfile.TemporaryDirectory() as d:
                m, x = small()
                c = m.getConstrs()[0]
                m.write(os.path.join(d, "before.lp"))
                before = m._to_json()
                change(m, x, c)
                after = m._to_json()
                self.assertNotEqual(after, before)
                self.assertEqual(after, m._record())  # made afresh from the changed model
                m.write(os.path.join(d, "after.lp"))
                # Against a twin built the same way and changed before anything was written,
                # so nothing of the model as it was can be in its LP text.
                twin, tx = small()
                change(twin, tx, twin.getConstrs()[0])
                with open(os.path.join(d, "after.lp")) as f:
                    self.assertEqual(f.read(), twin._lp_text())

    def test_an_unchanged_model_is_serialised_once(self):
        m, _ = small()
        made = []
        record = m._record
        m.__dict__["_record"] = lambda: made.append(1) or record()
        with tempfile.TemporaryDirectory() as d:
            m.write(os.path.join(d, "m.lp"))
            m.write(os.path.join(d, "m.mps"))
        first = m._to_json()
        first["from"] = "a caller's key"  # a caller may add keys; the next record has none
        self.assertNotIn("from", m._to_json())
        self.assertEqual(len(made), 1)



def solved():
    m, x = small()
    m.optimize()
    return m, x


class FailedChangeLeavesTheModel(unittest.TestCase):
    """A call that raises changes nothing: the arguments are checked before the model is
    modified, so a program that catches the error still has the model, its record and LP text
    and its solution as they were (Gurobi's calls either apply or raise)."""

    def failing_calls(self):
        nan = float("nan")

        def objective_sense(m, x, c): m.setObjective(x[0] + x[1], "max")  # int("max") raises
        def objective_nan(m, x, c): m.setObjective((x[0] * 1e200) * 1e200 * 0 + x[1])
        def objective_other_model(m, x, c): m.setObjective(x[0] + gp.Model().addVar())
        def chgcoeff_nan(m, x, c): m.chgCoeff(c, x[1], nan)
        def lb_nan(m, x, c): x[0].LB = nan
        def obj_nan(m, x, c): x[1].Obj = nan
        def vtype_bad(m, x, c): x[0].VType = "S"
        def rhs_nan(m, x, c): c.RHS = nan
        def sense_bad(m, x, c): c.Sense = "!"
        def addconstr_nan(m, x, c): m.addConstr((x[0] * 1e200) * 1e200 * 0 + x[1] <= 1, "bad")
        def addconstr_sense(m, x, c): m.addLConstr(x[0], "!", 1)
        def addvar_nan(m, x, c): m.addVar(lb=nan, name="bad")
        def modelsense_bad(m, x, c): m.ModelSense = "max"
        def objcon_nan(m, x, c): m.ObjCon = nan
        def remove_other(m, x, c): m.remove("x[0]")
        return [objective_sense, objective_nan, objective_other_model, chgcoeff_nan, lb_nan, obj_nan,
                vtype_bad, rhs_nan, sense_bad, addconstr_nan, addconstr_sense, addvar_nan, modelsense_bad,
                objcon_nan, remove_other]

    def test_a_call_that_raises_changes_nothing(self):
        for call in self.failing_calls():
            with self.subTest(call.__name__), tempfile.TemporaryDirectory() as d:
                m, x = solved()
                m.write(os.path.join(d, "before.lp"))
                before = m._to_json()
                with self.assertRaises(Exception):
                    call(m, x, m.getConstrs()[0])
                self.assertEqual(m._record(), before)
                self.assertEqual(m._to_json(), before)
                m.write(os.path.join(d, "after.lp"))
                with open(os.path.join(d, "before.lp")) as f, open(os.path.join(d, "after.lp")) as g:
                    self.assertEqual(g.read(), f.read())
                self.assertEqual((m.Status, m.ObjVal, x[0].X), (GRB.OPTIMAL, 1.0, 0.0))


class RenameKeepsTheSolution(unittest.TestCase):
    """A name is not part of the problem: after optimize(), renaming the model, a variable or
    a constraint keeps the solution (Gurobi does), while the record and LP text carry the new
    name; a change to the problem drops the solution."""

    def test_rename_keeps_solution_and_reaches_the_record(self):
        def modelname(m, x, c): m.ModelName = "renamed"
        def varname(m, x, c): x[2].VarName = "z"
        def constrname(m, x, c): c.ConstrName = "other"
        def setattr_name(m, x, c): m.setAttr("ModelName", "renamed")
        for rename in (modelname, varname, constrname, setattr_name):
            with self.subTest(rename.__name__):
                m, x = solved()
                before = m._to_json()
                rename(m, x, m.getConstrs()[0])
                self.assertEqual((m.Status, m.SolCount, m.ObjVal, x[2].X), (GRB.OPTIMAL, 1, 1.0, 1.0))
                self.assertNotEqual(m._to_json(), before)
                self.assertEqual(m._to_json(), m._record())
                self.assertIn(("renamed" if "model" in rename.__name__ or "setattr" in rename.__name__
                               else "z" if "var" in rename.__name__ else "other"), m._lp_text())

    def test_a_problem_change_drops_the_solution(self):
        m, x = solved()
        x[2].UB = 0.5
        self.assertEqual((m.Status, m.SolCount), (GRB.LOADED, 0))
        with self.assertRaises(AttributeError):
            m.ObjVal


class NanIsRefused(unittest.TestCase):
    """Gurobi refuses a NaN coefficient ("Invalid argument"): one made by the program's own
    arithmetic (inf * 0) when the row is added, one made by merging a row's terms (inf - inf)
    when the model is written or solved; never a file or solve with NaN in it."""

    def test_nan_coefficient_in_addconstr(self):
        m = gp.Model()
        z = m.addVar(name="z")
        with self.assertRaises(gp.GurobiError) as e:
            m.addConstr((z * 1e200) * 1e200 * 0 <= 1)
        self.assertIn("NaN", str(e.exception))
        self.assertEqual(m.NumConstrs, 0)
        with self.assertRaises(gp.GurobiError):
            m.addConstr(z * 1e200 * 1e200 * 0 + z >= 1)  # a quadratic or not, the same rule
        with self.assertRaises(gp.GurobiError):
            m.addConstr(z <= (z * 1e200 + 1e200) * 1e200 * 0)  # NaN constant
        self.assertEqual(m.NumConstrs, 0)

    def test_nan_from_merged_terms_refused_on_write_and_solve(self):
        m = gp.Model()
        m.Params.OutputFlag = 0
        z = m.addVar(name="z")
        m.addConstr(z * 1e200 * 1e200 - z * 1e200 * 1e200 <= 1)
        with tempfile.TemporaryDirectory() as d:
            for ext in ("lp", "mps", "json"):
                with self.subTest(ext), self.assertRaises(gp.GurobiError) as e:
                    m.write(os.path.join(d, "m." + ext))
                self.assertIn("NaN", str(e.exception))
            self.assertEqual(os.listdir(d), [])
        with self.assertRaises(gp.GurobiError):
            m.optimize()

    def test_nan_quadratic_terms_refused(self):
        m = gp.Model()
        z = m.addVar(name="z")
        with self.assertRaises(gp.GurobiError):
            m.addConstr(z * (z * 1e200 * 1e200 * 0) <= 1)
        with self.assertRaises(gp.GurobiError):
            m.setObjective(z * (z * 1e200 * 1e200 * 0))
        self.assertEqual((m.NumQConstrs, m.IsQP), (0, 0))


class ExpressionOperators(unittest.TestCase):
    """The operators build each expression directly for a number or a variable (expr.py's
    _linexpr) and through the general path for anything else: both give the same terms, in
    the same order, and the same constant (its sign too), and no expression shares a list
    with another, so changing one in place never changes another."""

    def setUp(self):
        self.m = gp.Model()
        self.x, self.y, self.z = (self.m.addVar(name=n) for n in "xyz")

    def terms(self, e):
        return ([v.VarName for v in (e.getVar(i) for i in range(e.size()))],
                [e.getCoeff(i) for i in range(e.size())], e.getConstant())

    def same(self, e, names, coefs, const):
        got = self.terms(e)
        self.assertEqual(got[:2], (names, coefs))
        self.assertEqual(got[2], const)
        self.assertEqual(math.copysign(1, got[2]), math.copysign(1, const), "sign of the constant")

    def test_variable_with_a_number_or_a_variable(self):
        x, y = self.x, self.y
        self.same(x * 3, ["x"], [3.0], 0.0)
        self.same(3 * x, ["x"], [3.0], 0.0)
        self.same(x * -2, ["x"], [-2.0], -0.0)  # 0 * -2, as x's expression times -2 always gave
        self.same(x * 2.5, ["x"], [2.5], 0.0)
        self.same(x + y, ["x", "y"], [1.0, 1.0], 0.0)
        self.same(x - y, ["x", "y"], [1.0, -1.0], 0.0)
        self.same(x + 2, ["x"], [1.0], 2.0)
        self.same(2 + x, ["x"], [1.0], 2.0)
        self.same(x - 2, ["x"], [1.0], -2.0)
        self.same(-x, ["x"], [-1.0], -0.0)
        self.same(sum([x, y, x]), ["x", "y", "x"], [1.0, 1.0, 1.0], 0.0)
        self.same(True * x, ["x"], [1.0], 0.0)  # a bool is a number; it takes the general path

    def test_expression_sums_and_differences(self):
        x, y, z = self.x, self.y, self.z
        self.same((x + 2 * y) + (3 * z - 1), ["x", "y", "z"], [1.0, 2.0, 3.0], -1.0)
        self.same((x + 2 * y) - (3 * z - 1), ["x", "y", "z"], [1.0, 2.0, -3.0], 1.0)
        self.same(sum(c * v for c, v in zip([4, 5, 6], [x, y, z])), ["x", "y", "z"], [4.0, 5.0, 6.0], 0.0)
        self.same(gp.quicksum([x, 2 * y, 3, z - 4]), ["x", "y", "z"], [1.0, 2.0, 1.0], -1.0)
        self.same(gp.quicksum([]), [], [], 0.0)
        self.same(-(x - 2 * y + 1), ["x", "y"], [-1.0, 2.0], -1.0)

    def test_no_expression_shares_a_list(self):
        x, y, z = self.x, self.y, self.z
        e = x + y
        for f in (e + z, e - z, e + 1, +e, -e, e * 2, e.copy(), gp.quicksum([e])):
            f += 5 * z
            f.addTerms([1.0], [x])
        self.same(e, ["x", "y"], [1.0, 1.0], 0.0)
        a = 2 * x
        b = a + y
        b += z
        self.same(a, ["x"], [2.0], 0.0)

    def test_nan_and_other_operands(self):
        x = self.x
        with self.assertRaises(gp.GurobiError):
            x * float("nan")
        with self.assertRaises(gp.GurobiError):
            x + float("nan")
        with self.assertRaises(TypeError):
            x + "a"
        with self.assertRaises(TypeError):
            (x + 1) + "a"
        q = x * self.y + x
        self.assertIsInstance(q, gp.QuadExpr)
        self.assertEqual(q.size(), 1)

    def test_no_attributes_beyond_its_own(self):
        # gurobipy's LinExpr and QuadExpr are compiled classes without a __dict__.
        with self.assertRaises(AttributeError):
            (self.x + 1).note = 1
        with self.assertRaises(AttributeError):
            (self.x * self.y).note = 1


class ShortPathsAgreeWithTheGeneralOnes(unittest.TestCase):
    """The modelling core's short paths for the common calls (model.py: addVars with one bound,
    objective and type for every key; addConstr of a linear expression against a number, a
    variable or a linear expression; lp_writer.py: terms in one loop, a row that needs no line
    break joined at once) make what the general paths make: the same stored rows (terms in the
    order written, the right-hand side's sign too), the same records, the same LP text, and the
    same exception before anything is added."""

    def rows(self, m):
        return [(r["name"], [(v.VarName, c) for v, c in r["terms"]], r["sense"], r["rhs"],
                 math.copysign(1, r["rhs"])) for r in m._crec]

    def test_addvars_alike_as_per_key(self):
        for vtype, lb, ub, obj in ((GRB.CONTINUOUS, 0, GRB.INFINITY, 0), (GRB.BINARY, -3, 7, 1.5),
                                   (GRB.INTEGER, -2.5, 4, -1), ("c", 1e31, -1e31, 2)):
            keys = [(i, j) for i in range(2) for j in "ab"]
            alike, per_key = gp.Model(), gp.Model()
            alike.addVars(2, ["a", "b"], lb=lb, ub=ub, obj=obj, vtype=vtype, name="x")
            n = len(keys)
            per_key.addVars(2, ["a", "b"], lb=[lb] * n, ub=[ub] * n, obj=[obj] * n, vtype=[vtype] * n,
                            name=["x[%d,%s]" % k for k in keys])
            self.assertEqual(alike._to_json(), per_key._to_json())
            self.assertEqual(alike._lp_text(), per_key._lp_text())
        m = gp.Model()
        x = m.addVars(3, name="")
        self.assertEqual([v.VarName for v in x.values()], ["C0", "C1", "C2"])
        y = m.addVars([4, 2], name="y")
        self.assertEqual([v.VarName for v in y.values()], ["y[4]", "y[2]"])
        self.assertEqual([v.index() for v in m.getVars()], [0, 1, 2, 3, 4])
        # Refused before any variable is added, as by the first _new_var of the general path.
        for bad in ({"vtype": "S"}, {"lb": float("nan")}, {"obj": float("nan")}):
            with self.assertRaises(gp.GurobiError):
                m.addVars(2, name="z", **bad)
            self.assertEqual(len(m._vrec), 5)

    def test_linear_rows_as_the_general_path(self):
        short, general = gp.Model(), gp.Model()
        for m in (short, general):
            x, y, z = (m.addVar(name=n) for n in "xyz")
            cases = [(x + 2 * y + 3, "<", 5), (x - 0.0, ">", 0), (-x, "=", -0.0), (x + y - y, "<", z + 2),
                     (2 * x, ">", y), (x + 1, "<", x - 1.5), (x + 0.0, "<", 2.5), (-(x + 0.0), "<", -0.0)]
            for k, (lhs, sense, rhs) in enumerate(cases):
                if m is short:
                    m.addConstr({"<": lhs <= rhs, ">": lhs >= rhs, "=": lhs == rhs}[sense], name="r%d" % k)
                else:
                    m._add_constr(lhs, sense, rhs, "r%d" % k)  # a sense given: the general path
        self.assertEqual(self.rows(short), self.rows(general))
        self.assertEqual(short._to_json(), general._to_json())
        self.assertEqual(short._lp_text(), general._lp_text())
        for m in (short, general):
            x = m.getVars()[0]
            with self.assertRaises(gp.GurobiError):
                m.addConstr(x <= float("nan"))
            other = gp.Model().addVar(name="o")
            with self.assertRaises(gp.GurobiError):
                m.addConstr(x <= other)
            self.assertEqual(len(m._crec), 8)

    def test_long_rows_break_where_the_general_loop_breaks(self):
        from trex_modeling import lp_writer

        def stepwise(prefix, tokens, tail=""):  # the line broken token by token
            lines, line = [], prefix
            for n, t in enumerate(tokens):
                if n == 0:
                    line += t
                elif len(line) > 50:
                    lines.append(line)
                    line = "   " + t
                else:
                    line += " " + t
            return lines + [line + tail]

        for width in range(1, 14):
            for count in range(0, 12):
                tokens = ["+ %s" % ("v" * width + str(i)) for i in range(count)]
                for prefix in (" c: ", " a_longer_row_name_of_twenty: "):
                    self.assertEqual(lp_writer._wrapped(prefix, tokens, " <= 3"), stepwise(prefix, tokens, " <= 3"),
                                     (prefix, tokens))

    def test_column_names_as_lp_name_gives_them(self):
        from trex_modeling import lp_writer
        names = ["x", "x", "y[1,2]", "2z", ".a", "a b", "", "x#2", "cé", "Constant", "x"]
        rows = [[n, 0.0, 1.0, "C", 0.0] for n in names]
        taken, expected = set(), []
        for i, n in enumerate(names):
            expected.append(lp_writer._lp_name(n, taken, "C%d" % i))
        got_taken = set()
        self.assertEqual(lp_writer._column_names(rows, got_taken), expected)
        self.assertEqual(got_taken, taken)
        self.assertEqual(expected[:4], ["x", "x#2", "y[1,2]", "_2z"])

    def test_variables_hash_by_identity(self):
        m = gp.Model()
        x, y = m.addVar(name="x"), m.addVar(name="y")
        d = {x: 1, y: 2}
        self.assertEqual((d[x], d[y], len(d)), (1, 2, 2))
        self.assertEqual(hash(x), hash(x))
        self.assertNotEqual(hash(x), hash(y))


class ReadModelFollowsChanges(unittest.TestCase):
    """gurobipy.read fills the model directly (lp_reader.py): its record is the file's model,
    and a change after the read reaches the record and the next write."""

    def test_read_then_change(self):
        m, x = small()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.lp")
            m.write(p)
            r = gp.read(p)
            self.assertEqual(r._to_json(), r._record())
            self.assertEqual(r._lp_text().replace("small", "m"), m._lp_text().replace("small", "m"))
            r.write(os.path.join(d, "r.lp"))
            r.getVars()[0].LB = 2
            r.write(os.path.join(d, "r2.lp"))
            with open(os.path.join(d, "r2.lp")) as f:
                text = f.read()
        self.assertEqual(r._to_json(), r._record())
        self.assertEqual(r._record()["vars"][0][1], 2.0)
        self.assertEqual(text, r._lp_text())
        self.assertIn("x[0] >= 2", text)


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if r.wasSuccessful() and r.testsRun > 0 else 1)
