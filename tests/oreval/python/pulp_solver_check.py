"""PuLP (Debian's python3-pulp, unchanged) with trex installed as its solver, standalone:
prob.solve(), PULP_CBC_CMD(...), getSolver, LpStatus and value() as CBC reports them
(Optimal 1, Infeasible -1, Unbounded -2), and a solver trex does not provide refused by
name. Run by tests/oreval/modeling_api_test.cc, which skips when PuLP is not installed."""
import sys
import unittest

import trex_pulp

trex_pulp.install()
import pulp  # noqa: E402


def knapsack():
    prob = pulp.LpProblem("k", pulp.LpMaximize)
    x = pulp.LpVariable("x", 0, 4, cat="Integer")
    y = pulp.LpVariable("y", 0)
    prob += 3 * x + 2 * y + 1
    prob += x + y <= 5.5, "cap"
    prob += x - y >= -2
    return prob, x, y


class Pulp(unittest.TestCase):
    def test_default_solver(self):
        prob, x, y = knapsack()
        self.assertEqual(prob.solve(), 1)
        self.assertEqual(pulp.LpStatus[prob.status], "Optimal")
        self.assertEqual((pulp.value(prob.objective), x.varValue, y.varValue), (16.0, 4.0, 1.5))

    def test_cbc_by_class_and_by_name(self):
        prob, x, y = knapsack()
        self.assertEqual(prob.solve(pulp.PULP_CBC_CMD(msg=0, timeLimit=30)), 1)
        self.assertEqual(pulp.value(prob.objective), 16.0)
        prob2, _, _ = knapsack()
        prob2.solve(pulp.getSolver("PULP_CBC_CMD", msg=False))
        self.assertEqual(pulp.value(prob2.objective), 16.0)

    def test_infeasible_and_unbounded(self):
        q = pulp.LpProblem("inf", pulp.LpMinimize)
        z = pulp.LpVariable("z", 0, 1)
        q += z
        q += z >= 2
        q.solve()
        self.assertEqual(pulp.LpStatus[q.status], "Infeasible")
        u = pulp.LpProblem("unb", pulp.LpMaximize)
        w = pulp.LpVariable("w", 0)
        u += w
        u += w >= 1
        u.solve()
        self.assertIn(pulp.LpStatus[u.status], ("Unbounded", "Infeasible"))

    def test_other_solvers_refused_by_name(self):
        prob, _, _ = knapsack()
        with self.assertRaises(pulp.PulpSolverError) as e:
            prob.solve(pulp.GLPK_CMD(msg=0))
        self.assertIn("GLPK_CMD", str(e.exception))


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if r.wasSuccessful() and r.testsRun > 0 else 1)
