// Row duals and reduced costs of an LP (SolveResult::duals, reduced_costs), in Gurobi's
// convention. Gurobi 12 reference manual, "Attributes": Pi (constraint attribute) is "the
// constraint dual value in the current solution (also known as the shadow price)", the rate
// of change of the objective per unit of right-hand side; RC (variable attribute) is "the
// reduced cost in the current solution", c_j - a_j' Pi. Both are given in the model's own
// sense: for a minimization a binding >= row has Pi >= 0 and a <= row Pi <= 0, for a
// maximization the reverse ("Dual values" in the manual's discussion of the sign convention).
// The answers below are computed by hand from the optimal basis (each derivation in the
// comment beside it) and checked again by re-solving with the right-hand side or the bound
// moved by 1e-3 (both LPs are nondegenerate, so the objective is linear there).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"

namespace trex::lp {
namespace {

// min 2x + 3y + 4z: c2 gives x = y + 1; c1 then needs 2y + z >= 3, and y buys a unit of it
// for 2.5, z for 4, so y = 1.5, x = 2.5, z = 0 (at its lower bound), objective 9.5; c3 has
// slack 4.5. Basis x, y: Pi1 + Pi2 = 2 and Pi1 - Pi2 = 3, so Pi1 = 2.5, Pi2 = -0.5, Pi3 = 0;
// RC_z = 4 - Pi1 = 1.5, RC_x = RC_y = 0.
constexpr const char* kMinLp =
    "min\n 2 x + 3 y + 4 z\nst\n c1: x + y + z >= 4\n c2: x - y = 1\n c3: x + 2 y <= 10\nend\n";

// max 3x + 2y + z with x <= 3: x = 3 (at its upper bound); c1 leaves y + z = 3 and c2 asks
// z >= y + 1, so y = 1, z = 2, objective 13. Basis y, z: Pi1 - Pi2 = 2 and Pi1 + Pi2 = 1, so
// Pi1 = 1.5 (a <= row of a max: >= 0), Pi2 = -0.5 (a >= row of a max: <= 0); RC_x = 3 - Pi1
// = 1.5 (>= 0 at an upper bound of a max), RC_y = RC_z = 0.
constexpr const char* kMaxLp =
    "max\n 3 x + 2 y + z\nst\n c1: x + y + z <= 6\n c2: z - y >= 1\nbounds\n x <= 3\nend\n";

SolveResult solve(const Model& m, const std::string& solver = "cbc") {
  SolveResult r = make_solver(solver)->solve(m, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kOptimal);
  return r;
}

TEST(LpDuals, MinimizationByHand) {
  Model m = read_lp(kMinLp, "min.lp");
  SolveResult r = solve(m);
  EXPECT_NEAR(r.objective, 9.5, 1e-9);
  ASSERT_EQ(r.duals.size(), 3u);
  ASSERT_EQ(r.reduced_costs.size(), 3u);
  EXPECT_NEAR(r.duals[0], 2.5, 1e-9);   // c1, >=
  EXPECT_NEAR(r.duals[1], -0.5, 1e-9);  // c2, =
  EXPECT_NEAR(r.duals[2], 0, 1e-9);     // c3, <=, not binding
  EXPECT_NEAR(r.reduced_costs[0], 0, 1e-9);
  EXPECT_NEAR(r.reduced_costs[1], 0, 1e-9);
  EXPECT_NEAR(r.reduced_costs[2], 1.5, 1e-9);  // z at its lower bound 0
}

TEST(LpDuals, MaximizationByHandInTheModelsOwnSense) {
  // The objective goes to CLP negated (a minimization); the duals come back in the max sense.
  Model m = read_lp(kMaxLp, "max.lp");
  SolveResult r = solve(m);
  EXPECT_NEAR(r.objective, 13, 1e-9);
  ASSERT_EQ(r.duals.size(), 2u);
  ASSERT_EQ(r.reduced_costs.size(), 3u);
  EXPECT_NEAR(r.duals[0], 1.5, 1e-9);   // c1, <=
  EXPECT_NEAR(r.duals[1], -0.5, 1e-9);  // c2, >=
  EXPECT_NEAR(r.reduced_costs[0], 1.5, 1e-9);  // x at its upper bound 3
  EXPECT_NEAR(r.reduced_costs[1], 0, 1e-9);
  EXPECT_NEAR(r.reduced_costs[2], 0, 1e-9);
}

TEST(LpDuals, AutoPassesThemThrough) {
  for (const char* text : {kMinLp, kMaxLp}) {
    Model m = read_lp(text, "t.lp");
    SolveResult a = solve(m, "auto"), c = solve(m, "cbc");
    EXPECT_EQ(a.duals, c.duals);
    EXPECT_EQ(a.reduced_costs, c.reduced_costs);
    EXPECT_FALSE(a.duals.empty());
  }
}

// RC_j = c_j - sum_i Pi_i a_ij, Gurobi's definition, holds for every variable.
TEST(LpDuals, ReducedCostsAreCostMinusColumnTimesDuals) {
  for (const char* text : {kMinLp, kMaxLp}) {
    Model m = read_lp(text, "t.lp");
    SolveResult r = solve(m);
    std::vector<double> rc(size_t(m.num_vars()));
    for (int j = 0; j < m.num_vars(); ++j) rc[size_t(j)] = m.var(j).cost;
    for (int i = 0; i < m.num_rows(); ++i)
      for (const Term& t : m.row(i).terms) rc[size_t(t.var)] -= r.duals[size_t(i)] * t.coef;
    for (int j = 0; j < m.num_vars(); ++j) EXPECT_NEAR(r.reduced_costs[size_t(j)], rc[size_t(j)], 1e-9) << text;
  }
}

// Pi = d(objective)/d(rhs) and RC = d(objective)/d(the bound the variable sits at), checked by
// re-solving with the rhs or bound moved by h (forward difference).
TEST(LpDuals, MatchAFiniteDifferenceOfTheObjective) {
  constexpr double h = 1e-3;
  for (const char* text : {kMinLp, kMaxLp}) {
    Model m = read_lp(text, "t.lp");
    SolveResult r = solve(m);
    for (int i = 0; i < m.num_rows(); ++i) {
      Model moved = m;
      Constraint& row = moved.row(i);
      // The row's right-hand side: both sides of an equality move together.
      if (std::isfinite(row.lower)) row.lower += h;
      if (std::isfinite(row.upper)) row.upper += h;
      SolveResult s = solve(moved);
      EXPECT_NEAR((s.objective - r.objective) / h, r.duals[size_t(i)], 1e-6) << text << " row " << row.name;
    }
    for (int j = 0; j < m.num_vars(); ++j) {
      const Variable& v = m.var(j);
      double x = r.x[size_t(j)];
      bool at_lower = std::fabs(x - v.lower) <= 1e-9, at_upper = std::fabs(x - v.upper) <= 1e-9;
      if (!at_lower && !at_upper) {
        EXPECT_NEAR(r.reduced_costs[size_t(j)], 0, 1e-9) << "basic " << v.name;
        continue;
      }
      Model moved = m;
      // Move the bound it sits at into the feasible side, so the variable is forced along.
      if (at_lower) moved.var(j).lower += h;
      else moved.var(j).upper -= h;
      SolveResult s = solve(moved);
      double rate = (s.objective - r.objective) / (at_lower ? h : -h);
      EXPECT_NEAR(rate, r.reduced_costs[size_t(j)], 1e-6) << text << " var " << v.name;
    }
  }
}

TEST(LpDuals, NoneWithoutAnOptimalContinuousLp) {
  // A MIP (Gurobi refuses Pi and RC there too), an infeasible LP, a convex QP.
  Model mip = read_lp("max\n x + y\nst\n c1: 2 x + 2 y <= 3\ngenerals\n x\nend\n", "mip.lp");
  SolveResult r = make_cbc_solver()->solve(mip, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_TRUE(r.duals.empty());
  EXPECT_TRUE(r.reduced_costs.empty());

  Model infeasible = read_lp("min\n x\nst\n c1: x >= 5\n c2: x <= 3\nend\n", "inf.lp");
  r = make_cbc_solver()->solve(infeasible, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_TRUE(r.duals.empty());
  EXPECT_TRUE(r.reduced_costs.empty());

  Model qp = read_lp("min\n x + [ 2 x ^ 2 ] / 2\nst\n c1: x >= 1\nend\n", "qp.lp");
  r = make_cbc_solver()->solve(qp, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_TRUE(r.duals.empty());
  EXPECT_TRUE(r.reduced_costs.empty());
}

}  // namespace
}  // namespace trex::lp
