// The "glpk" back end against models with hand-computed answers. Every test skips when
// glpsol is not installed, since trex only ever runs it as a separate program.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::lp {
namespace {

constexpr double kTol = 1e-6;

class GlpkSolver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!program_available("glpsol")) GTEST_SKIP() << "glpsol (GLPK) is not installed";
  }
  SolveResult solve(const Model& m, const SolveOptions& options = {}) const {
    return solver_->solve(m, options);
  }
  std::unique_ptr<Solver> solver_ = make_glpk_solver();
};

void expect_optimal(const Model& m, const SolveResult& r, double objective) {
  ASSERT_EQ(r.status, SolveStatus::kOptimal) << r.message;
  EXPECT_NEAR(r.objective, objective, kTol);
  ASSERT_EQ(r.x.size(), size_t(m.num_vars()));
  EXPECT_LE(m.max_violation(r.x), kTol);
  EXPECT_NEAR(m.objective_value(r.x), r.objective, kTol);
  EXPECT_EQ(r.solver, "glpk");
}

TEST_F(GlpkSolver, NameAndVersion) {
  EXPECT_EQ(solver_->name(), "glpk");
  EXPECT_NE(solver_->version().find("GLPK"), std::string::npos) << solver_->version();
  EXPECT_NE(solver_->version().find("glpsol"), std::string::npos) << solver_->version();
}

TEST_F(GlpkSolver, LpMinimize) {
  // min x + 2y  s.t.  x + y >= 3,  x - y <= 1  ->  x = 2, y = 1, objective 4.
  Model m;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  int y = m.add_var("y", 0, kInf, VarType::kContinuous, 2);
  m.add_ge("cover", {{x, 1}, {y, 1}}, 3);
  m.add_le("diff", {{x, 1}, {y, -1}}, 1);
  SolveResult r = solve(m);
  expect_optimal(m, r, 4);
  EXPECT_NEAR(r.x[size_t(x)], 2, kTol);
  EXPECT_NEAR(r.x[size_t(y)], 1, kTol);
  EXPECT_EQ(r.solver_version, solver_->version());
  EXPECT_GT(r.seconds, 0);
}

TEST_F(GlpkSolver, LpMaximizeWithEqualityAndConstant) {
  // max 3x + 2y + 5  s.t.  x + y = 4,  x <= 3  ->  x = 3, y = 1, objective 16.
  Model m;
  m.sense = Sense::kMaximize;
  m.objective_constant = 5;
  int x = m.add_var("x", 0, 3, VarType::kContinuous, 3);
  int y = m.add_var("y", 0, kInf, VarType::kContinuous, 2);
  m.add_eq("total", {{x, 1}, {y, 1}}, 4);
  expect_optimal(m, solve(m), 16);
}

TEST_F(GlpkSolver, RangedRowFreeAndNegativeVariables) {
  // 1 <= x - y <= 3, x free, y in [-4, -1], objective x - 2 (constant -2).
  // min: x = 1 + y at y = -4 -> x = -3, objective -5. max: x = 3 + y at y = -1 -> 2, obj 0.
  Model m;
  m.objective_constant = -2;
  int x = m.add_var("x", -kInf, kInf, VarType::kContinuous, 1);
  int y = m.add_var("y", -4, -1);
  m.add_row("band", {{x, 1}, {y, -1}}, 1, 3);
  SolveResult r = solve(m);
  expect_optimal(m, r, -5);
  EXPECT_NEAR(r.x[size_t(x)], -3, kTol);
  m.sense = Sense::kMaximize;
  r = solve(m);
  expect_optimal(m, r, 0);
  EXPECT_NEAR(r.x[size_t(x)], 2, kTol);
  EXPECT_NEAR(r.x[size_t(y)], -1, kTol);
}

TEST_F(GlpkSolver, OddNamesFreeRowsAndUnusedColumns) {
  // Names glpsol could never read, a free row, an empty row, a column in no row, a fixed
  // column: none of it may change the answer. min a + b with a + b >= 2, b fixed at 0.5.
  Model m;
  int a = m.add_var("a b $ 'x'", 0, kInf, VarType::kContinuous, 1);
  int b = m.add_var("RHS", 0.5, 0.5, VarType::kContinuous, 1);
  int c = m.add_var("MARKER", 2, 5);            // in no row, no cost
  int d = m.add_var("free var", -kInf, kInf);   // in a free row only
  m.add_ge("OBJ", {{a, 1}, {b, 1}}, 2);
  m.add_row("unbounded row", {{a, 7}, {d, 1}}, -kInf, kInf);
  m.add_le("empty", {}, 1);
  SolveResult r = solve(m);
  expect_optimal(m, r, 2);
  EXPECT_NEAR(r.x[size_t(b)], 0.5, kTol);
  EXPECT_GE(r.x[size_t(c)], 2 - kTol);
  EXPECT_LE(r.x[size_t(c)], 5 + kTol);
}

TEST_F(GlpkSolver, EmptyModelIsItsConstant) {
  Model m;
  m.objective_constant = 2.5;
  SolveResult r = solve(m);
  expect_optimal(m, r, 2.5);
}

TEST_F(GlpkSolver, Knapsack) {
  // The classic P01 instance: capacity 165, optimum 309 with items 1, 2, 3, 4 and 6.
  const std::vector<double> w = {23, 31, 29, 44, 53, 38, 63, 85, 89, 82};
  const std::vector<double> v = {92, 57, 49, 68, 60, 43, 67, 84, 87, 72};
  Model m;
  m.sense = Sense::kMaximize;
  std::vector<Term> row;
  for (size_t i = 0; i < w.size(); ++i) {
    int j = m.add_var("item" + std::to_string(i), 0, 1, VarType::kBinary, v[i]);
    row.push_back({j, w[i]});
  }
  m.add_le("capacity", row, 165);
  SolveResult r = solve(m);
  expect_optimal(m, r, 309);
  const std::vector<double> chosen = {1, 1, 1, 1, 0, 1, 0, 0, 0, 0};
  for (size_t i = 0; i < chosen.size(); ++i) EXPECT_NEAR(r.x[i], chosen[i], kTol) << i;
}

TEST_F(GlpkSolver, IntegerColumnsKeepTheirBounds) {
  // GLPK's MPS reader would make an integer column without bounds binary; here x may go
  // to 7 and z down to -3.
  Model m;
  m.sense = Sense::kMaximize;
  int x = m.add_var("x", 0, kInf, VarType::kInteger, 1);
  int z = m.add_var("z", -kInf, kInf, VarType::kInteger, -1);
  m.add_le("cap", {{x, 1}}, 7.5);
  m.add_ge("floor", {{z, 1}}, -3.5);
  SolveResult r = solve(m);
  expect_optimal(m, r, 10);
  EXPECT_NEAR(r.x[size_t(x)], 7, kTol);
  EXPECT_NEAR(r.x[size_t(z)], -3, kTol);
}

TEST_F(GlpkSolver, IntegerWithNegativeBoundsAndConstant) {
  // min 3x + 2y + 1, x integer in [-7, -2], y integer >= -10, x + y >= -9.5.
  // 3x + 2y = 2(x + y) + x >= 2 * -9 - 7 = -25 at x = -7, y = -2; objective -24.
  Model m;
  m.objective_constant = 1;
  int x = m.add_var("x", -7, -2, VarType::kInteger, 3);
  int y = m.add_var("y", -10, kInf, VarType::kInteger, 2);
  m.add_ge("sum", {{x, 1}, {y, 1}}, -9.5);
  SolveResult r = solve(m);
  expect_optimal(m, r, -24);
  EXPECT_NEAR(r.x[size_t(x)], -7, kTol);
  EXPECT_NEAR(r.x[size_t(y)], -2, kTol);
}

TEST_F(GlpkSolver, BinaryCover) {
  // Cover the three edges of a triangle with the fewest vertices: 2.
  Model m;
  int a = m.add_var("a", 0, 1, VarType::kBinary, 1);
  int b = m.add_var("b", 0, 1, VarType::kBinary, 1);
  int c = m.add_var("c", 0, 1, VarType::kBinary, 1);
  m.add_ge("ab", {{a, 1}, {b, 1}}, 1);
  m.add_ge("bc", {{b, 1}, {c, 1}}, 1);
  m.add_ge("ac", {{a, 1}, {c, 1}}, 1);
  expect_optimal(m, solve(m), 2);
}

TEST_F(GlpkSolver, InfeasibleLp) {
  Model m;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  int y = m.add_var("y", 0, kInf, VarType::kContinuous, 1);
  m.add_ge("low", {{x, 1}, {y, 1}}, 3);
  m.add_le("high", {{x, 1}, {y, 1}}, 1);
  for (Sense s : {Sense::kMinimize, Sense::kMaximize}) {
    m.sense = s;
    SolveResult r = solve(m);
    EXPECT_EQ(r.status, SolveStatus::kInfeasible) << to_string(r.status) << ": " << r.message;
    EXPECT_FALSE(has_solution(r.status));
  }
}

TEST_F(GlpkSolver, InfeasibleAndDualInfeasibleLpIsInfeasible) {
  // x - y >= 1 and x - y <= 0 cannot hold; max x would also be unbounded without them.
  Model m;
  m.sense = Sense::kMaximize;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  int y = m.add_var("y");
  m.add_ge("a", {{x, 1}, {y, -1}}, 1);
  m.add_le("b", {{x, 1}, {y, -1}}, 0);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kInfeasible) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, UnboundedLp) {
  Model m;
  m.sense = Sense::kMaximize;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  int y = m.add_var("y");
  m.add_le("diff", {{x, 1}, {y, -1}}, 1);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kUnbounded) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, IntegerInfeasibleMilp) {
  // 2x = 1 has the LP solution x = 0.5 but no integer one.
  Model m;
  int x = m.add_var("x", 0, 10, VarType::kInteger, 1);
  m.add_eq("half", {{x, 2}}, 1);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kInfeasible) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, LpInfeasibleMilp) {
  Model m;
  int x = m.add_var("x", 0, kInf, VarType::kInteger, 1);
  int y = m.add_var("y", 0, kInf, VarType::kInteger, 1);
  m.add_ge("low", {{x, 1}, {y, 1}}, 3);
  m.add_le("high", {{x, 1}, {y, 1}}, 1);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kInfeasible) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, UnboundedMilp) {
  // max x + y, x - y <= 0.5, both integer: (k, k) is feasible for every k.
  Model m;
  m.sense = Sense::kMaximize;
  int x = m.add_var("x", 0, kInf, VarType::kInteger, 1);
  int y = m.add_var("y", 0, kInf, VarType::kInteger, 1);
  m.add_le("diff", {{x, 1}, {y, -1}}, 0.5);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kUnbounded) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, UnboundedRelaxationWithoutIntegerPointIsInfeasible) {
  // max t with t unbounded, but 2u - 2v = 1 has no integer solution. GLPK's MIP
  // presolver does not see that, so the feasibility run must.
  Model m;
  m.sense = Sense::kMaximize;
  int t = m.add_var("t", 0, kInf, VarType::kInteger, 1);
  int u = m.add_var("u", 0, 10, VarType::kInteger);
  int v = m.add_var("v", 0, 10, VarType::kInteger);
  m.add_eq("odd", {{u, 2}, {v, -2}}, 1);
  (void)t;
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kInfeasible) << to_string(r.status) << ": " << r.message;
  // With 2u - 2v = 2 instead it has integer points, and so is unbounded.
  m.row(0).lower = m.row(0).upper = 2;
  r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kUnbounded) << to_string(r.status) << ": " << r.message;
}

TEST_F(GlpkSolver, QuadraticIsUnsupported) {
  Model m;
  int x = m.add_var("x", 0, 1, VarType::kContinuous, 1);
  m.add_objective_quad(x, x, 1);
  SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveStatus::kUnsupported);
  EXPECT_EQ(r.message, "glpk: quadratic terms are not supported");

  Model q;
  int y = q.add_var("y", 0, 1, VarType::kContinuous, 1);
  q.add_row("circle", {}, -kInf, 1, {{y, y, 1}});
  r = solve(q);
  EXPECT_EQ(r.status, SolveStatus::kUnsupported);
  EXPECT_EQ(r.message, "glpk: quadratic terms are not supported");
}

TEST_F(GlpkSolver, MalformedModelThrows) {
  Model m;
  m.add_var("x", 2, 1);
  EXPECT_THROW(solve(m), InputError);
}

TEST_F(GlpkSolver, MissingGlpsolIsAnError) {
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent-trex-dir", 1);
  Model m;
  m.add_var("x", 0, 1, VarType::kContinuous, 1);
  SolveResult r = solve(m);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(r.status, SolveStatus::kError);
  EXPECT_NE(r.message.find("glpsol not found"), std::string::npos) << r.message;
}

TEST_F(GlpkSolver, FailingGlpsolIsAnErrorWithItsLastLine) {
  (void)solver_->version();  // cache the real version before PATH changes
  char dir_template[] = "/tmp/trex-glpk-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string fake = dir + "/glpsol";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'Reading problem data'\necho 'something broke'\nexit 3\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", (dir + ":" + saved).c_str(), 1);
  Model m;
  m.add_var("x", 0, 1, VarType::kContinuous, 1);
  SolveResult r = solve(m);
  ::setenv("PATH", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, SolveStatus::kError);
  EXPECT_NE(r.message.find("something broke"), std::string::npos) << r.message;
}

// A market-split-style instance (Cornuejols and Dawande): sum_j a_ij x_j = b_i over 40
// binaries. Branch and bound takes far longer than a second on it; with continuous
// slacks in the objective, a feasible point is easy but a proof of optimality is not.
Model market_split(bool with_slacks) {
  Model m;
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return double((seed >> 8) % 100);
  };
  const int rows = 4, cols = 40;
  std::vector<std::vector<Term>> terms(rows);
  for (int j = 0; j < cols; ++j) {
    int x = m.add_var("x" + std::to_string(j), 0, 1, VarType::kBinary);
    for (int i = 0; i < rows; ++i) terms[size_t(i)].push_back({x, next()});
  }
  for (int i = 0; i < rows; ++i) {
    double total = 0;
    for (const Term& t : terms[size_t(i)]) total += t.coef;
    if (with_slacks) {
      int up = m.add_var("up" + std::to_string(i), 0, kInf, VarType::kContinuous, 1);
      int down = m.add_var("down" + std::to_string(i), 0, kInf, VarType::kContinuous, 1);
      terms[size_t(i)].push_back({up, 1});
      terms[size_t(i)].push_back({down, -1});
    }
    m.add_eq("split" + std::to_string(i), terms[size_t(i)], std::floor(total / 2));
  }
  return m;
}

TEST_F(GlpkSolver, TimeLimit) {
  SolveOptions opt;
  opt.time_limit_s = 1;
  Model hard = market_split(true);
  SolveResult r = solve(hard, opt);
  ASSERT_EQ(r.status, SolveStatus::kTimeLimitFeasible) << to_string(r.status) << ": " << r.message;
  ASSERT_EQ(r.x.size(), size_t(hard.num_vars()));
  EXPECT_LE(hard.max_violation(r.x), kTol);
  EXPECT_NEAR(hard.objective_value(r.x), r.objective, kTol);
  EXPECT_LE(r.best_bound, r.objective + kTol);

  r = solve(market_split(false), opt);
  EXPECT_TRUE(r.status == SolveStatus::kTimeLimitNoSolution ||
              r.status == SolveStatus::kTimeLimitFeasible)
      << to_string(r.status) << ": " << r.message;
}

// A random 0/1 knapsack (or its LP relaxation) and its optimum by brute force (or greedy).
struct Case {
  Model model;
  double optimum;
};

Case random_knapsack(uint32_t seed, bool integer) {
  auto next = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return double(1 + (seed >> 16) % 50);
  };
  const int n = 10;
  std::vector<double> w(n), v(n);
  for (int i = 0; i < n; ++i) {
    w[size_t(i)] = next();
    v[size_t(i)] = next();
  }
  double cap = 0;
  for (double x : w) cap += x;
  cap = std::floor(cap / 3);
  Case c;
  c.model.sense = Sense::kMaximize;
  c.model.objective_constant = double(seed % 7);
  std::vector<Term> row;
  for (int i = 0; i < n; ++i) {
    VarType t = integer ? VarType::kBinary : VarType::kContinuous;
    row.push_back({c.model.add_var("x" + std::to_string(i), 0, 1, t, v[size_t(i)]), w[size_t(i)]});
  }
  c.model.add_le("cap", row, cap);
  double best = 0;
  if (integer) {
    for (int mask = 0; mask < (1 << n); ++mask) {
      double wt = 0, val = 0;
      for (int i = 0; i < n; ++i)
        if (mask >> i & 1) wt += w[size_t(i)], val += v[size_t(i)];
      if (wt <= cap) best = std::max(best, val);
    }
  } else {
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[size_t(i)] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return v[size_t(a)] * w[size_t(b)] > v[size_t(b)] * w[size_t(a)];
    });
    double left = cap;
    for (int i : order) {
      double take = std::min(1.0, left / w[size_t(i)]);
      best += take * v[size_t(i)];
      left -= take * w[size_t(i)];
    }
  }
  c.optimum = best + c.model.objective_constant;
  return c;
}

TEST_F(GlpkSolver, ConcurrentSolvesAreIndependent) {
  std::vector<Case> cases;
  for (uint32_t k = 0; k < 50; ++k) cases.push_back(random_knapsack(1000 + k, k % 3 != 0));
  std::vector<SolveResult> results(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < cases.size();)
        results[k] = solver_->solve(cases[k].model, {});
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE("case " + std::to_string(k));
    expect_optimal(cases[k].model, results[k], cases[k].optimum);
  }
}

}  // namespace
}  // namespace trex::lp
