// The default back end: COIN-OR CLP for LPs and convex QPs, CBC for MILPs, in-process.
//
// Measured on this machine's Debian build (CBC 2.10.8): CBC's command-line driver
// (CbcMain1, and the C API Cbc_solve that goes through it) returns wrong MIP answers when
// two threads solve at once (upstream coin-or/Cbc#332), and CBC's own LP reader drops
// quadratic terms. So trex loads the matrix itself and calls CbcModel::branchAndBound,
// with a fresh solver per call and no shared state.
//
// The objective is always handed to COIN minimized (negated for a maximized model), so
// no result depends on a back end's handling of the sense.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "coin/CbcModel.hpp"
#include "coin/CbcStrategy.hpp"
#include "coin/ClpSimplex.hpp"
#include "coin/ClpSolve.hpp"
#include "coin/CoinPackedMatrix.hpp"
#include "coin/OsiClpSolverInterface.hpp"
#include "trex/lp/convexity.h"
#include "trex/lp/solver.h"

namespace trex::lp {

namespace {

constexpr double kIntegralityTolerance = 1e-6;
// A returned point may miss a row or bound by round-off, not by more.
constexpr double kFeasibilityCheckTolerance = 1e-5;
// Time allowed to decide whether a MILP with an unbounded relaxation has an integer point.
constexpr double kFeasibilityCheckSeconds = 10;
// ClpRun::status when CLP could not tell infeasible from unbounded.
constexpr int kUndecided = 100;

// The model in the column-wise arrays COIN loads, minimized.
struct CoinArrays {
  CoinPackedMatrix matrix;
  std::vector<double> col_lower, col_upper, cost, row_lower, row_upper;
  double sign = 1;  // +1 minimize, -1 maximize (cost = sign * c)
};

double coin_bound(double v) {
  if (v == kInf) return COIN_DBL_MAX;
  if (v == -kInf) return -COIN_DBL_MAX;
  return v;
}

CoinArrays to_coin(const Model& m) {
  CoinArrays a;
  a.sign = m.sense == Sense::kMinimize ? 1.0 : -1.0;
  const int n = m.num_vars();
  a.col_lower.resize(size_t(n));
  a.col_upper.resize(size_t(n));
  a.cost.resize(size_t(n));
  for (int j = 0; j < n; ++j) {
    const Variable& v = m.var(j);
    a.col_lower[size_t(j)] = coin_bound(v.lower);
    a.col_upper[size_t(j)] = coin_bound(v.upper);
    a.cost[size_t(j)] = a.sign * v.cost;
  }
  std::vector<int> rows, cols;
  std::vector<double> vals;
  rows.reserve(size_t(m.num_nonzeros()));
  cols.reserve(size_t(m.num_nonzeros()));
  vals.reserve(size_t(m.num_nonzeros()));
  for (int r = 0; r < m.num_rows(); ++r) {
    const Constraint& c = m.row(r);
    a.row_lower.push_back(coin_bound(c.lower));
    a.row_upper.push_back(coin_bound(c.upper));
    for (const Term& t : c.terms) {
      rows.push_back(r);
      cols.push_back(t.var);
      vals.push_back(t.coef);
    }
  }
  a.matrix = CoinPackedMatrix(true, rows.data(), cols.data(), vals.data(), CoinBigIndex(vals.size()));
  // The triplet constructor sizes the matrix by the largest index seen; empty trailing rows
  // or columns must still exist.
  a.matrix.setDimensions(m.num_rows(), n);
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class CbcSolver final : public Solver {
 public:
  std::string name() const override { return "cbc"; }
  std::string version() const override {
    return std::string("CBC ") + TREX_CBC_VERSION + " / CLP " + TREX_CLP_VERSION;
  }

  SolveResult solve(const Model& model, const SolveOptions& options) const override {
    model.validate();
    if (std::string huge = model.find_huge_number(kLargestCoinNumber); !huge.empty()) {
      SolveResult refused;
      refused.status = SolveStatus::kUnsupported;
      refused.message = "cbc: " + huge + " is too large for CLP (limit 1e20)";
      refused.solver = name();
      refused.solver_version = version();
      return refused;
    }
    auto t0 = std::chrono::steady_clock::now();
    SolveResult r;
    if (model.has_quadratic_constraints()) {
      r.status = SolveStatus::kUnsupported;
      r.message = "cbc: quadratic constraints are not supported (no term is ever dropped)";
    } else if (model.has_quadratic_objective() && model.is_mip()) {
      r.status = SolveStatus::kUnsupported;
      r.message = "cbc: integer variables with a quadratic objective (MIQP) are not supported";
    } else if (model.has_quadratic_objective()) {
      std::string why;
      if (!objective_is_convex(model, &why)) {
        r.status = SolveStatus::kUnsupported;
        r.message = "cbc: the quadratic objective is not convex for " +
                    std::string(to_string(model.sense)) + " (" + why +
                    "); CLP solves convex QPs only";
      } else {
        r = solve_lp(model, options);
      }
    } else if (model.is_mip()) {
      r = solve_mip(model, options);
    } else {
      r = solve_lp(model, options);
    }
    r.solver = name();
    r.solver_version = version();
    r.seconds = seconds_since(t0);
    return r;
  }

 private:
  struct ClpRun {
    int status = 4;  // CLP's: 0 optimal, 1 infeasible, 2 unbounded, 3 limit, 4+ failed
    bool primal_feasible = false;
    std::vector<double> x;
    double objective = 0;  // minimized form, without the constant
  };

  // One CLP solve with presolve: the dual simplex for an LP, CLP's nonlinear primal for a QP.
  static ClpRun run_clp(const Model& model, const CoinArrays& a, const SolveOptions& options) {
    ClpSimplex clp;
    clp.setLogLevel(options.verbose ? 1 : 0);
    clp.loadProblem(a.matrix, a.col_lower.data(), a.col_upper.data(), a.cost.data(),
                    a.row_lower.data(), a.row_upper.data());
    bool quadratic = model.has_quadratic_objective();
    if (quadratic) load_hessian(model, a.sign, clp);
    if (options.time_limit_s > 0) clp.setMaximumSeconds(options.time_limit_s);
    if (quadratic) {
      // CLP's primal simplex runs its nonlinear (reduced-gradient) method on a quadratic
      // objective; presolve does not take quadratic objectives.
      clp.primal();
    } else {
      ClpSolve how;
      how.setSolveType(ClpSolve::useDual);
      how.setPresolveType(ClpSolve::presolveOn);
      clp.initialSolve(how);
    }
    ClpRun run;
    run.status = clp.status();
    run.primal_feasible = clp.primalFeasible();
    const double* sol = clp.primalColumnSolution();
    run.x.assign(sol, sol + model.num_vars());
    run.objective = clp.objectiveValue();
    return run;
  }

  // The verdict on a continuous model (or a MILP's relaxation). Presolve and the simplex codes
  // are fast but not to be trusted on a negative verdict: CLP 1.17's dual and primal simplex
  // both call some unbounded LPs infeasible (seen with an unbounded column that is in no row).
  // So "infeasible" or "unbounded" is decided again without presolve: feasibility first, on a
  // zero objective, then boundedness from the feasible basis found.
  static ClpRun lp_verdict(const Model& model, const CoinArrays& a, const SolveOptions& options) {
    ClpRun run = run_clp(model, a, options);
    if (run.status != 1 && run.status != 2) return run;
    if (model.has_quadratic_objective()) return run;  // convex QP: primal simplex already
    // Is there any point? A zero objective answers that reliably.
    ClpSimplex clp;
    clp.setLogLevel(0);
    std::vector<double> zeros(a.cost.size(), 0.0);
    clp.loadProblem(a.matrix, a.col_lower.data(), a.col_upper.data(), zeros.data(),
                    a.row_lower.data(), a.row_upper.data());
    if (options.time_limit_s > 0) clp.setMaximumSeconds(options.time_limit_s);
    clp.dual();
    ClpRun verdict;
    if (clp.status() != 0) {
      verdict.status = clp.status() == 1 ? 1 : kUndecided;
      return verdict;
    }
    // There is: the primal simplex goes on from that feasible basis with the real objective,
    // so it never searches for feasibility again and its verdict on boundedness holds.
    clp.chgObjCoefficients(a.cost.data());
    clp.primal();
    verdict.status = clp.status() == 0 || clp.status() == 2 ? clp.status() : kUndecided;
    verdict.primal_feasible = true;
    const double* sol = clp.primalColumnSolution();
    verdict.x.assign(sol, sol + model.num_vars());
    verdict.objective = clp.objectiveValue();
    return verdict;
  }

  // CLP's quadratic objective is c'x + 1/2 x'Hx with one triangle of H stored: an
  // off-diagonal entry stands for both H_ij and H_ji.
  static void load_hessian(const Model& model, double sign, ClpSimplex& clp) {
    std::vector<int> rows, cols;
    std::vector<double> vals;
    for (const QuadTerm& q : model.objective_quad) {
      rows.push_back(q.j);
      cols.push_back(q.i);
      vals.push_back(sign * (q.i == q.j ? 2 * q.coef : q.coef));
    }
    CoinPackedMatrix h(true, rows.data(), cols.data(), vals.data(), CoinBigIndex(vals.size()));
    h.setDimensions(model.num_vars(), model.num_vars());
    clp.loadQuadraticObjective(h);
  }

  SolveResult solve_lp(const Model& model, const SolveOptions& options) const {
    CoinArrays a = to_coin(model);
    ClpRun run = lp_verdict(model, a, options);
    SolveResult r;
    switch (run.status) {
      case 0:
        r.status = SolveStatus::kOptimal;
        break;
      case 1:
        r.status = SolveStatus::kInfeasible;
        return r;
      case 2:
        r.status = SolveStatus::kUnbounded;
        return r;
      case kUndecided:
        r.status = SolveStatus::kInfeasibleOrUnbounded;
        r.message = "clp: could not tell infeasible from unbounded";
        return r;
      case 3:
        if (!run.primal_feasible) {
          r.status = SolveStatus::kTimeLimitNoSolution;
          return r;
        }
        r.status = SolveStatus::kTimeLimitFeasible;
        break;
      default:
        r.status = SolveStatus::kError;
        r.message = "clp: numerical failure (status " + std::to_string(run.status) + ")";
        return r;
    }
    r.x = std::move(run.x);
    r.objective = a.sign * run.objective + model.objective_constant;
    r.best_bound = r.objective;
    return r;
  }

  struct CbcRun {
    SolveStatus status = SolveStatus::kError;
    std::vector<double> x;
    double objective = 0;  // minimized form, without the constant
    double bound = 0;
  };

  static CbcRun run_cbc(const Model& model, const CoinArrays& a, const SolveOptions& options,
                        bool zero_objective, bool preprocess) {
    OsiClpSolverInterface solver;
    std::vector<double> zeros(a.cost.size(), 0.0);
    solver.loadProblem(a.matrix, a.col_lower.data(), a.col_upper.data(),
                       zero_objective ? zeros.data() : a.cost.data(), a.row_lower.data(),
                       a.row_upper.data());
    for (int j = 0; j < model.num_vars(); ++j)
      if (model.var(j).type != VarType::kContinuous) solver.setInteger(j);
    solver.messageHandler()->setLogLevel(0);
    solver.getModelPtr()->setLogLevel(0);

    CbcRun run;
    // The relaxation first: its infeasibility proves the MILP's, and its unboundedness is
    // settled apart, since CBC's own verdict there does not say whether integers fit.
    if (!zero_objective) {
      ClpRun relaxation = lp_verdict(model, a, options);
      if (relaxation.status == 1) {
        run.status = SolveStatus::kInfeasible;
        return run;
      }
      if (relaxation.status == 2) {
        run.status = SolveStatus::kUnbounded;  // of the relaxation; the caller decides
        return run;
      }
      if (relaxation.status == kUndecided) {
        run.status = SolveStatus::kInfeasibleOrUnbounded;
        return run;
      }
    }
    solver.initialSolve();

    CbcModel cbc(solver);
    cbc.setLogLevel(options.verbose ? 1 : 0);
    cbc.messageHandler()->setLogLevel(options.verbose ? 1 : 0);
    CbcStrategyDefault strategy(/*cutsOnlyAtRoot=*/1, /*numberStrong=*/5, /*numberBeforeTrust=*/5);
    strategy.setupPreProcessing(preprocess ? 1 : 0);
    cbc.setStrategy(strategy);
    // Gap as (incumbent - bound) <= gap * max(1, |incumbent|).
    cbc.setAllowableFractionGap(options.mip_rel_gap);
    cbc.setAllowableGap(options.mip_rel_gap);
    cbc.setUseElapsedTime(true);
    if (options.time_limit_s > 0) cbc.setMaximumSeconds(options.time_limit_s);
    if (options.threads > 1) cbc.setNumberThreads(options.threads);
    cbc.branchAndBound();

    const double* best = cbc.bestSolution();
    if (best) {
      run.x.assign(best, best + model.num_vars());
      run.objective = cbc.getObjValue();
    }
    run.bound = cbc.getBestPossibleObjValue();
    if (cbc.isProvenOptimal() && best) {
      run.status = SolveStatus::kOptimal;
    } else if (cbc.isProvenInfeasible()) {
      run.status = SolveStatus::kInfeasible;
    } else if (cbc.isContinuousUnbounded()) {
      run.status = SolveStatus::kUnbounded;
    } else if (cbc.isSecondsLimitReached()) {
      run.status = best ? SolveStatus::kTimeLimitFeasible : SolveStatus::kTimeLimitNoSolution;
    } else if (cbc.isProvenOptimal()) {
      run.status = SolveStatus::kInfeasible;  // search finished with no solution
    } else {
      run.status = SolveStatus::kError;
    }
    return run;
  }

  SolveResult solve_mip(const Model& model, const SolveOptions& options) const {
    CoinArrays a = to_coin(model);
    CbcRun run = run_cbc(model, a, options, false, /*preprocess=*/true);
    if (has_solution(run.status) && model.max_violation(run.x) > kFeasibilityCheckTolerance) {
      // Seen with CBC 2.10.8: when CGL preprocessing reduces a model to nothing, CBC reports
      // "no integer variables" and hands back the LP relaxation as optimal. Every answer is
      // checked against the model, and a wrong one is solved again without preprocessing.
      run = run_cbc(model, a, options, false, /*preprocess=*/false);
      if (has_solution(run.status) && model.max_violation(run.x) > kFeasibilityCheckTolerance) {
        SolveResult bad;
        bad.status = SolveStatus::kError;
        bad.message = "cbc: returned a point that violates the model by " +
                      std::to_string(model.max_violation(run.x));
        return bad;
      }
    }
    SolveResult r;
    if (run.status == SolveStatus::kUnbounded) {
      // The relaxation is unbounded; with rational data the MILP is then unbounded exactly
      // when it has an integer point at all.
      // Finding that point can be as hard as any MILP (an equality with fractional
      // coefficients over integers, say), so it gets a bounded share of the time.
      SolveOptions feasibility = options;
      feasibility.time_limit_s =
          options.time_limit_s > 0 ? std::min(options.time_limit_s, kFeasibilityCheckSeconds)
                                   : kFeasibilityCheckSeconds;
      CbcRun feasible = run_cbc(model, a, feasibility, /*zero_objective=*/true, /*preprocess=*/false);
      r.status = has_solution(feasible.status)                 ? SolveStatus::kUnbounded
                 : feasible.status == SolveStatus::kInfeasible ? SolveStatus::kInfeasible
                                                               : SolveStatus::kInfeasibleOrUnbounded;
      if (r.status == SolveStatus::kInfeasibleOrUnbounded)
        r.message = "cbc: the LP relaxation is unbounded; no integer point was found or ruled out in " +
                    std::to_string(int(feasibility.time_limit_s)) + " s";
      return r;
    }
    r.status = run.status;
    if (r.status == SolveStatus::kError) r.message = "cbc: search ended without a verdict";
    if (r.status == SolveStatus::kInfeasibleOrUnbounded)
      r.message = "clp: could not tell whether the relaxation is infeasible or unbounded";
    if (!has_solution(r.status)) return r;
    for (int j = 0; j < model.num_vars(); ++j) {
      double& v = run.x[size_t(j)];
      if (model.var(j).type != VarType::kContinuous && std::fabs(v - std::round(v)) <= kIntegralityTolerance)
        v = std::round(v) + 0.0;  // + 0.0 turns -0 into 0
    }
    r.x = std::move(run.x);
    r.objective = a.sign * run.objective + model.objective_constant;
    r.best_bound = a.sign * run.bound + model.objective_constant;
    return r;
  }
};

}  // namespace

std::unique_ptr<Solver> make_cbc_solver() { return std::make_unique<CbcSolver>(); }

}  // namespace trex::lp
