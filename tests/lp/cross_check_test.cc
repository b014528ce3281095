// The default back end and GLPK (an independent code, run as a separate process) must agree
// on status and objective for a fixed family of models covering LP, MILP, infeasible and
// unbounded cases. This needs no benchmark data; Bench4Opt adds 800 more comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "trex/lp/solver.h"
#include "trex/util/subprocess.h"

namespace trex::lp {
namespace {

enum class Kind { kLp, kMilp, kInfeasible, kUnbounded, kIntegerInfeasible };

// A random dense model of the given kind; seeded, so every run builds the same models.
Model make_model(Kind kind, unsigned seed) {
  std::mt19937 rng(seed);
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Model m;
  m.sense = rng() % 2 ? Sense::kMaximize : Sense::kMinimize;
  int n = 3 + int(rng() % 6), rows = 2 + int(rng() % 5);
  bool integer = kind == Kind::kMilp || kind == Kind::kIntegerInfeasible;
  for (int j = 0; j < n; ++j) {
    double cost = std::round(uni(-10, 10) * 4) / 4;
    if (kind == Kind::kUnbounded && j == 0) cost = m.sense == Sense::kMaximize ? 1 : -1;
    VarType type = integer && j % 2 == 0 ? VarType::kInteger : VarType::kContinuous;
    double lower = rng() % 4 == 0 ? -std::round(uni(0, 5)) : 0;
    double upper = kind == Kind::kUnbounded && j == 0 ? kInf : std::round(uni(5, 20));
    m.add_var("x" + std::to_string(j), lower, upper, type, cost);
  }
  for (int r = 0; r < rows; ++r) {
    std::vector<Term> terms;
    for (int j = 1; j < n; ++j)  // column 0 stays out of the rows, so it can run off when free
      if (rng() % 3) terms.push_back(Term{j, std::round(uni(-5, 9))});
    double rhs = std::round(uni(5, 40));
    switch (rng() % 3) {
      case 0: m.add_le("r" + std::to_string(r), terms, rhs); break;
      case 1: m.add_ge("r" + std::to_string(r), terms, -rhs); break;
      default: m.add_row("r" + std::to_string(r), terms, -rhs, rhs); break;
    }
  }
  if (kind != Kind::kUnbounded) m.add_le("x0_cap", {{0, 1}}, 25);
  if (kind == Kind::kInfeasible) m.add_ge("need", {{1, 1}, {2, 1}}, 100);  // both at most 20
  // x0 and x2 are integer: 2 (x0 + x2) = 7 has no solution.
  if (kind == Kind::kIntegerInfeasible) m.add_eq("odd", {{0, 2}, {2, 2}}, 7);
  return m;
}

TEST(CrossCheck, CbcGlpkAndSbbAgreeOnFortyModels) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol is not installed";
  auto cbc = make_solver("cbc");
  auto glpk = make_solver("glpk");
  auto sbb = make_solver("sbb");  // solves LPs with its own search, MILPs through cbc
  const Kind kinds[] = {Kind::kLp, Kind::kMilp, Kind::kInfeasible, Kind::kUnbounded,
                        Kind::kIntegerInfeasible};
  int compared = 0;
  int by_status[8] = {};
  for (Kind kind : kinds) {
    for (unsigned seed = 0; seed < 8; ++seed) {
      Model m = make_model(kind, 7919 * seed + unsigned(kind));
      SolveResult a = cbc->solve(m, {});
      SolveResult b = glpk->solve(m, {});
      ++compared;
      ++by_status[int(a.status)];
      SolveResult c = sbb->solve(m, {});
      EXPECT_EQ(c.status, a.status) << "sbb, kind " << int(kind) << " seed " << seed;
      if (c.status == SolveStatus::kOptimal && a.status == SolveStatus::kOptimal) {
        EXPECT_NEAR(c.objective, a.objective, 1e-6 * std::max(1.0, std::fabs(a.objective)));
      }
      ASSERT_EQ(a.status, b.status) << "kind " << int(kind) << " seed " << seed << ": cbc "
                                    << to_string(a.status) << ", glpk " << to_string(b.status);
      if (a.status == SolveStatus::kOptimal) {
        EXPECT_NEAR(a.objective, b.objective, 1e-6 * std::max(1.0, std::fabs(a.objective)))
            << "kind " << int(kind) << " seed " << seed;
      }
    }
  }
  EXPECT_EQ(compared, 40);
  // The family must really cover every verdict, or the agreement proves little.
  EXPECT_GT(by_status[int(SolveStatus::kOptimal)], 10);
  EXPECT_GE(by_status[int(SolveStatus::kInfeasible)], 8);
  EXPECT_GE(by_status[int(SolveStatus::kUnbounded)], 4);
}

}  // namespace
}  // namespace trex::lp
