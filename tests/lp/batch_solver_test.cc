// BatchSolver's verdicts feed the training corpus: on random LPs and MILPs (feasible,
// infeasible and unbounded ones) they must be the cbc back end's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "trex/lp/batch_solver.h"
#include "trex/lp/solver.h"

namespace trex::lp {
namespace {

// A random model with n variables and m rows; `kind` 0: bounded, 1: made infeasible by two
// contradicting rows, 2: a variable with a negative cost in no row and no upper bound
// (unbounded).
Model random_model(std::mt19937& rng, int n, int m, bool integer, int kind) {
  std::uniform_int_distribution<int> coef(-5, 9), cost(-9, 9), rhs(5, 40);
  Model model;
  for (int j = 0; j < n; ++j)
    model.add_var("x" + std::to_string(j), 0, 10 + rng() % 5, integer && (rng() % 2) ? VarType::kInteger : VarType::kContinuous,
                  cost(rng));
  for (int r = 0; r < m; ++r) {
    std::vector<Term> terms;
    for (int j = 0; j < n; ++j)
      if (rng() % 2) terms.push_back(Term{j, double(coef(rng))});
    if (rng() % 3 == 0) {
      model.add_ge("r" + std::to_string(r), terms, -double(rhs(rng)));
    } else {
      model.add_le("r" + std::to_string(r), terms, double(rhs(rng)));
    }
  }
  if (kind == 1) {
    model.add_ge("lo", {{0, 1.0}, {1, 1.0}}, 7);
    model.add_le("hi", {{0, 1.0}, {1, 1.0}}, 3);
  }
  if (kind == 2) {
    model.add_var("free_ray", 0, kInf, integer ? VarType::kInteger : VarType::kContinuous, -1);
  }
  // Maximized models flip the costs; the ray of kind 2 must still improve the objective.
  if (rng() % 2) {
    model.sense = Sense::kMaximize;
    for (int j = 0; j < model.num_vars(); ++j) model.var(j).cost = -model.var(j).cost;
  }
  return model;
}

TEST(BatchSolver, AgreesWithCbcOnRandomLpsAndMilps) {
  std::mt19937 rng(1234);
  BatchSolver batch;
  auto cbc = make_solver("cbc");
  int counts[3] = {0, 0, 0};
  for (int trial = 0; trial < 120; ++trial) {
    int kind = trial % 3;
    bool integer = (trial / 3) % 2;
    Model m = random_model(rng, 4 + int(rng() % 6), 3 + int(rng() % 5), integer, kind);
    SolveResult a = batch.solve(m, SolveOptions{});
    SolveResult b = cbc->solve(m, SolveOptions{});
    ASSERT_EQ(a.status, b.status) << "trial " << trial << ": " << to_string(a.status) << " vs " << to_string(b.status);
    if (b.status == SolveStatus::kOptimal) {
      EXPECT_NEAR(a.objective, b.objective, 1e-6 * std::max(1.0, std::fabs(b.objective))) << "trial " << trial;
      EXPECT_LE(m.max_violation(a.x), 1e-6) << "trial " << trial;
    }
    counts[kind] += b.status == (kind == 0 ? SolveStatus::kOptimal : kind == 1 ? SolveStatus::kInfeasible : SolveStatus::kUnbounded);
  }
  // The generator's intent holds for most trials (a random bounded model may be infeasible).
  EXPECT_GT(counts[0], 20);
  EXPECT_EQ(counts[1], 40);
  EXPECT_GT(counts[2], 20);
  // The 40 infeasible ones have an infeasible relaxation: answered by CLP's feasibility test
  // (the cbc back end's own), not by CBC's driver; the unbounded ones still go to CBC.
  EXPECT_GT(batch.fast_calls(), 60);
  EXPECT_GT(batch.fallback_calls(), 20);
}

TEST(BatchSolver, InfeasibilityIsProvedByClpUnlessTheNodeLimitIsReached) {
  BatchSolver batch;
  auto cbc = make_solver("cbc");
  // x + y >= 7 and x + y <= 3: no point at all, integer or not.
  Model none;
  int x = none.add_var("x", 0, 10, VarType::kInteger, 1), y = none.add_var("y", 0, 10, VarType::kInteger, 2);
  none.add_ge("lo", {{x, 1.0}, {y, 1.0}}, 7);
  none.add_le("hi", {{x, 1.0}, {y, 1.0}}, 3);
  SolveResult r = batch.solve(none, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_EQ(r.status, cbc->solve(none, SolveOptions{}).status);
  EXPECT_EQ(r.solver, "clp-bb");
  EXPECT_EQ(batch.fallback_calls(), 0);
  // 2z = 1 over integers: the relaxation has z = 0.5, no integer point; the tree proves it.
  Model odd;
  int z = odd.add_var("z", 0, 10, VarType::kInteger, 1);
  odd.add_eq("half", {{z, 2.0}}, 1);
  r = batch.solve(odd, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_EQ(r.status, cbc->solve(odd, SolveOptions{}).status);
  EXPECT_EQ(r.solver, "clp-bb");
  EXPECT_EQ(batch.fallback_calls(), 0);
  // Parity: 2 (x1 + ... + x16) = 15 over binaries. Every node's relaxation is feasible until
  // the node limit; CBC decides.
  Model parity;
  std::vector<Term> twice;
  for (int j = 0; j < 16; ++j) twice.push_back(Term{parity.add_var("x" + std::to_string(j), 0, 1, VarType::kBinary, 1), 2.0});
  parity.add_eq("odd", twice, 15);
  r = batch.solve(parity, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_EQ(r.solver, "cbc");
  EXPECT_EQ(batch.fallback_calls(), 1);
  // The same rows over continuous variables: an infeasible LP, answered by CLP.
  none.var(x).type = none.var(y).type = VarType::kContinuous;
  r = batch.solve(none, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_EQ(r.solver, "clp");
  EXPECT_EQ(batch.fallback_calls(), 1);
}

TEST(BatchSolver, SosAndSemicontinuousGoToCbc) {
  Model m;
  m.sense = Sense::kMaximize;
  int x = m.add_var("x", 0, 5, VarType::kContinuous, 3), y = m.add_var("y", 0, 5, VarType::kContinuous, 4);
  m.add_le("cap", {{x, 1.0}, {y, 1.0}}, 10);
  m.sos.push_back(SosSet{"s", 1, 0, {x, y}, {1, 2}});
  BatchSolver batch;
  SolveResult r = batch.solve(m, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_NEAR(r.objective, 20, 1e-9);
  EXPECT_EQ(batch.fallback_calls(), 1);
}

}  // namespace
}  // namespace trex::lp
