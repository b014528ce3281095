// A solver object for streams of small models, kept by one thread and reused for each.
//
// Solver set-up, not arithmetic, dominates small models: a fresh CBC run costs about a
// millisecond before the first pivot (preprocessing, cut generators, a second LP solve).
// BatchSolver keeps one CBC back end for what needs it and solves the rest with one
// ClpSimplex per model, kept for all nodes of that model (a new one per model, so that
// results never depend on what was solved before):
//   * an LP with CLP's dual simplex, returning the row duals as well (an optimality
//     certificate, see ordata/certificate.h);
//   * a MILP by depth-first branch and bound over that ClpSimplex, each node warm-started
//     from the previous basis (bound changes only), branching on the most fractional integer
//     variable, pruning by the incumbent (by its ceiling when the objective is integral).
// Only verdicts it can prove itself come from this path: an optimum whose point satisfies
// the model (max_violation <= 1e-6); an infeasible root that the cbc back end's own
// feasibility test (a zero objective, the dual simplex, a fresh simplex object) also finds
// infeasible, since an infeasible relaxation proves a MILP infeasible too; and a MILP whose
// whole tree (bounded root, under the node limit) holds no integer point. For those two,
// CBC's driver spent 1-600 ms per corpus sample, under its process-wide lock, to agree.
// Anything else (an unbounded root, a node limit, a numerical doubt, quadratic terms) goes
// to the "cbc" back end, so unbounded verdicts are always the standard back end's.
// Not thread-safe: one BatchSolver per thread.
#pragma once

#include <memory>
#include <vector>

#include "trex/lp/solver.h"

class ClpSimplex;

namespace trex::lp {

class BatchSolver {
 public:
  BatchSolver();
  ~BatchSolver();
  BatchSolver(const BatchSolver&) = delete;
  BatchSolver& operator=(const BatchSolver&) = delete;

  // As Solver::solve (validates first; throws InputError on a malformed model). For an LP
  // solved optimal on the fast path, *row_duals (if given) receives the duals of the
  // minimized form (a maximized model's costs negated); otherwise it is cleared.
  SolveResult solve(const Model& model, const SolveOptions& options, std::vector<double>* row_duals = nullptr);

  // How the calls were answered, for reports.
  long fast_calls() const { return fast_; }
  long fallback_calls() const { return fallback_; }
  long nodes() const { return nodes_; }

  static constexpr int kNodeLimit = 5000;  // beyond it, CBC's cuts do better

 private:
  std::unique_ptr<ClpSimplex> blank_;  // never loaded nor solved: copied for each model
  std::unique_ptr<ClpSimplex> clp_;
  std::unique_ptr<Solver> fallback_solver_;
  long fast_ = 0, fallback_ = 0, nodes_ = 0;
};

}  // namespace trex::lp
