// Solving a Model: one interface, several back ends.
//
// A back end either solves a model it can handle or returns kUnsupported with a reason;
// it never drops what it cannot handle (a quadratic term, say) and solves the rest.
// "Did the call work" and "what is true of the model" are one status here because every
// outcome, infeasible and unbounded included, is a successful solve; kError is kept for a
// back end that failed (a crashed subprocess, a numerical breakdown).
//
// Back ends (see solver_names()):
//   "auto"  the default: "cbc" for every model it can solve, "sbb" for the rest (quadratic
//           rows, nonconvex quadratic objectives, integer variables with quadratic terms).
//   "cbc"   COIN-OR CBC in-process (CbcModel::branchAndBound over OsiClpSolverInterface)
//           for MILPs, CLP for LPs, CLP's QP for convex quadratic objectives.
//   "sbb"   trex's spatial branch-and-bound over CLP: global optima of nonconvex quadratic
//           models whose quadratic variables are bounded (McCormick relaxations).
//   "glpk"  GLPK's glpsol as a separate process (GPL-3+, so never linked), for cross-checks.
//
// Thread safety: solve() may be called from many threads at once, on the same or different
// Solver objects; each call builds its own solver state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trex/lp/model.h"

namespace trex::lp {

// New values go last: statuses are written to JSON by name, but code may switch on them.
enum class SolveStatus {
  kOptimal,
  kInfeasible,
  kUnbounded,
  kInfeasibleOrUnbounded,
  kTimeLimitFeasible,    // stopped by the time limit with an incumbent (objective/x valid)
  kTimeLimitNoSolution,  // stopped by the time limit without one
  kUnsupported,          // the back end cannot solve this class of model; see message
  kError,                // the back end failed; see message
};

const char* to_string(SolveStatus s);
// True when objective and primal values are meaningful.
bool has_solution(SolveStatus s);

struct SolveOptions {
  double time_limit_s = 0;   // 0: none; else seconds of wall clock for the whole call, every phase included
  int threads = 1;           // MIP search threads; results are deterministic for a fixed count
  double mip_rel_gap = 1e-9; // stop when (incumbent - bound) / max(1, |incumbent|) <= this
  bool verbose = false;      // let the back end print its log on stderr
};

struct SolveResult {
  SolveStatus status = SolveStatus::kError;
  double objective = 0;            // in the model's own sense, constant included
  std::vector<double> x;           // one value per variable, when has_solution(status)
  std::string solver;              // back-end name, e.g. "cbc"
  std::string solver_version;      // e.g. "CBC 2.10.8 / CLP 1.17.6"
  std::string message;             // why, for kUnsupported and kError; extra detail otherwise
  double seconds = 0;              // wall time of the solve call
  double best_bound = 0;           // MIP dual bound when known
  // Duals of a continuous LP solved to optimality (status kOptimal, no integer variables, SOS
  // sets, semi-continuous variables or quadratic terms); empty otherwise. Gurobi's convention
  // (its Pi and RC attributes), in the model's own sense whether it minimizes or maximizes:
  //   duals[i]         = d(objective) / d(right-hand side of row i), one per row;
  //   reduced_costs[j] = c_j - sum_i duals[i] * a_ij, one per variable: the rate at which the
  //                      objective changes as the variable moves off the bound it sits at.
  // Only the cbc back end (CLP) and so "auto" fill them.
  std::vector<double> duals;
  std::vector<double> reduced_costs;
};

class Solver {
 public:
  virtual ~Solver() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  // validate()s the model first: a malformed model throws InputError.
  virtual SolveResult solve(const Model& model, const SolveOptions& options) const = 0;
};

// The largest magnitude of a coefficient, finite bound or right-hand side that the COIN-OR
// back ends accept; beyond it CLP 1.17 misbehaves (it aborts on an objective coefficient of
// 1e25), so such models get kUnsupported instead.
inline constexpr double kLargestCoinNumber = 1e20;

// The back end `trex solve` and the other parts use unless told otherwise.
inline constexpr const char* kDefaultSolver = "auto";

// Names of the back ends built into this binary.
std::vector<std::string> solver_names();
// Throws InputError::field("--solver", ...) for an unknown name.
std::unique_ptr<Solver> make_solver(const std::string& name = "cbc");

// Back-end factories (one file each).
std::unique_ptr<Solver> make_cbc_solver();
std::unique_ptr<Solver> make_glpk_solver();
// node_cap: the spatial search stops after this many nodes and returns its incumbent and bound
// as kTimeLimitFeasible (a limit that, unlike time, stops at the same point on every machine).
std::unique_ptr<Solver> make_spatial_solver(int64_t node_cap = 200000);
std::unique_ptr<Solver> make_auto_solver();

}  // namespace trex::lp
