#include "trex/lp/batch_solver.h"

#include <chrono>
#include <cmath>

#include "coin/ClpSimplex.hpp"
#include "trex/lp/coin_model.h"

namespace trex::lp {

namespace {

constexpr double kIntTol = 1e-6;
constexpr double kFeasTol = 1e-6;

// A branch-and-bound node: bounds of the integer variables (index into `ints`).
struct Node {
  std::vector<double> lo, hi;
};

// The cbc back end's own test of a negative verdict (cbc_solver.cc, lp_verdict): the rows and
// bounds with a zero objective, by the dual simplex, on a fresh simplex object. A zero
// objective makes the verdict about feasibility alone (with the real one, CLP can call an
// unbounded LP infeasible). An infeasible relaxation proves a MILP infeasible as well, which
// is what CBC's driver concludes there too, after a millisecond of set-up and preprocessing.
bool relaxation_infeasible(const CoinArrays& arrays, const ClpSimplex& blank) {
  ClpSimplex clp(blank);
  load_coin(arrays, clp, /*zero_objective=*/true);
  clp.dual();
  return clp.status() == 1;
}

}  // namespace

BatchSolver::BatchSolver() : blank_(std::make_unique<ClpSimplex>()), fallback_solver_(make_cbc_solver()) {
  blank_->setLogLevel(0);
}

BatchSolver::~BatchSolver() = default;

SolveResult BatchSolver::solve(const Model& m, const SolveOptions& options, std::vector<double>* row_duals) {
  if (row_duals) row_duals->clear();
  auto t0 = std::chrono::steady_clock::now();
  auto fallback = [&] {
    ++fallback_;
    return fallback_solver_->solve(m, options);
  };
  m.validate();
  if (m.has_quadratic_objective() || m.has_quadratic_constraints() || m.has_special_structure() ||
      !m.find_huge_number(kLargestCoinNumber).empty())
    return fallback();

  // A fresh simplex object per model: CLP's scaling and factorization state would otherwise
  // carry over from the previous model, and the last bits of a solution would depend on
  // which models this thread solved before (runs must not depend on threads).
  // It is a copy of a blank object that never solved anything: the same state as a newly
  // constructed one, but a constructor builds CLP's and CoinUtils' message tables string by
  // string (about 100 us, 7% of a corpus sample's CPU), and a copy takes one block of them.
  clp_ = std::make_unique<ClpSimplex>(*blank_);
  ClpSimplex& clp = *clp_;
  const CoinArrays arrays = to_coin(m);
  load_coin(arrays, clp);
  clp.dual();
  auto answer = [&](SolveResult r) {
    ++fast_;
    r.solver = m.is_mip() ? "clp-bb" : "clp";
    r.solver_version = std::string(m.is_mip() ? "trex depth-first branch and bound over " : "") + "CLP " + TREX_CLP_VERSION;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  if (clp.isProvenPrimalInfeasible() && relaxation_infeasible(arrays, *blank_)) {
    SolveResult r;
    r.status = SolveStatus::kInfeasible;
    return answer(r);
  }
  if (!clp.isProvenOptimal()) return fallback();

  const int n = m.num_vars();
  std::vector<double> x;
  if (!m.is_mip()) {
    x.assign(clp.primalColumnSolution(), clp.primalColumnSolution() + n);
    if (m.max_violation(x) > kFeasTol) return fallback();
    if (row_duals) row_duals->assign(clp.dualRowSolution(), clp.dualRowSolution() + m.num_rows());
  } else {
    // Depth-first branch and bound; the incumbent is kept in the minimized form.
    std::vector<int> ints;
    for (int j = 0; j < n; ++j)
      if (m.var(j).type != VarType::kContinuous) ints.push_back(j);
    Node root;
    for (int j : ints) {
      root.lo.push_back(std::ceil(m.var(j).lower - kIntTol));
      root.hi.push_back(std::floor(m.var(j).upper + kIntTol));
    }
    // With integer costs on integer variables only, every integer point has an integer
    // objective, so a node whose bound rounds up to the incumbent cannot improve on it.
    bool integral_objective = true;
    for (int j = 0; j < n; ++j) {
      const Variable& var = m.var(j);
      if (var.cost != 0 && (var.type == VarType::kContinuous || var.cost != std::round(var.cost)))
        integral_objective = false;
    }
    double incumbent = kInf;
    std::vector<double> best;
    std::vector<Node> stack{root};
    long nodes = 0;
    while (!stack.empty()) {
      if (++nodes > kNodeLimit) return fallback();
      Node node = std::move(stack.back());
      stack.pop_back();
      for (size_t k = 0; k < ints.size(); ++k) {
        clp.setColumnLower(ints[k], coin_bound(node.lo[k]));
        clp.setColumnUpper(ints[k], coin_bound(node.hi[k]));
      }
      // Only bounds changed since the last solve: keep CLP's work areas and factorization
      // between nodes (startFinishOptions 1 | 2 | 4, as CBC's own node solves do).
      clp.dual(0, 7);
      if (clp.isProvenPrimalInfeasible()) continue;
      if (!clp.isProvenOptimal()) return fallback();
      double bound = clp.objectiveValue();
      if (integral_objective) bound = std::ceil(bound - 1e-6);
      if (bound >= incumbent - 1e-9 * std::max(1.0, std::fabs(incumbent))) continue;
      const double* sol = clp.primalColumnSolution();
      // Most fractional variable, binaries first: fixing a yes/no decision (a setup, a
      // container) settles more of the model than moving a quantity by one.
      int branch = -1;
      double most = kIntTol;
      bool branch_binary = false;
      for (size_t k = 0; k < ints.size(); ++k) {
        double v = sol[ints[k]], frac = std::fabs(v - std::round(v));
        if (frac <= kIntTol) continue;
        bool binary = node.lo[k] >= 0 && node.hi[k] <= 1;
        if ((binary && !branch_binary) || (binary == branch_binary && frac > most))
          most = frac, branch = int(k), branch_binary = binary;
      }
      if (branch < 0) {
        incumbent = clp.objectiveValue();
        best.assign(sol, sol + n);
        continue;
      }
      double v = sol[ints[size_t(branch)]];
      Node down = node, up = std::move(node);
      down.hi[size_t(branch)] = std::floor(v);
      up.lo[size_t(branch)] = std::ceil(v);
      // Explore the side the relaxation leans to first (pushed last).
      if (v - std::floor(v) >= 0.5) {
        stack.push_back(std::move(down));
        stack.push_back(std::move(up));
      } else {
        stack.push_back(std::move(up));
        stack.push_back(std::move(down));
      }
    }
    nodes_ += nodes;
    // The tree is exhausted without an integer point: with no incumbent nothing was pruned by
    // its bound, so every leaf was a node CLP proved infeasible (a restriction of a bounded
    // relaxation: never the unbounded case CLP can mislabel). That is the proof CBC's search
    // gives as well, where its driver spent 1-600 ms per corpus sample (measured, with its
    // preprocessing, cuts and heuristics, under its process-wide lock) to agree.
    if (best.empty()) {
      SolveResult r;
      r.status = SolveStatus::kInfeasible;
      return answer(std::move(r));
    }
    for (int j : ints) best[size_t(j)] = std::round(best[size_t(j)]) + 0.0;
    if (m.max_violation(best) > kFeasTol) return fallback();
    x = std::move(best);
  }
  SolveResult r;
  r.status = SolveStatus::kOptimal;
  r.objective = m.objective_value(x);
  r.best_bound = r.objective;
  r.x = std::move(x);
  return answer(std::move(r));
}

}  // namespace trex::lp
