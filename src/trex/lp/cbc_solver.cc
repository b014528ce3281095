// The default back end: COIN-OR CLP for LPs and convex QPs, CBC for MILPs, in-process.
//
// MILPs go through CBC's own driver, CbcMain0/CbcMain1 (the code behind the cbc program),
// on a CbcModel that trex loaded itself, so the search is the cbc program's default run:
// CGL preprocessing, probing, Gomory, knapsack cover, clique, MIR, flow cover, two-step MIR
// and zero-half cuts, the feasibility pump, RINS, rounding, greedy and combine heuristics,
// its strong-branching and node defaults. Before, trex called CbcModel::branchAndBound with
// CbcStrategyDefault, which lacks most of these: COIN-OR's retail3.mps and wedding_16.mps
// ran into the time limit where the cbc program solves them in seconds.
//
// Measured on this machine's Debian build (CBC 2.10.8): the driver returns wrong MIP answers
// when two threads run it at once (upstream coin-or/Cbc#332: it keeps parameters in static
// state). So every CbcMain call holds one process-wide mutex; parallel MILP solves queue
// there (CBC's own --threads parallelism inside one solve is unaffected). CBC's own file
// readers are never used: trex reads the file (CBC's LP reader drops quadratic terms).
//
// SOS sets become CbcSOS objects; semi-continuous variables a binary and two rows each (see
// coin_model.h). The objective is always handed to COIN minimized (negated for a maximized
// model), so no result depends on a back end's handling of the sense. The time limit is one
// wall-clock budget for the whole call (deadline.h).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>

#include "coin/CbcModel.hpp"
#include "coin/CbcSOS.hpp"
#include "coin/CbcSolver.hpp"
#include "coin/ClpSimplex.hpp"
#include "coin/ClpSolve.hpp"
#include "coin/CoinPackedMatrix.hpp"
#include "coin/OsiClpSolverInterface.hpp"
#include "trex/lp/coin_model.h"
#include "trex/lp/convexity.h"
#include "trex/lp/deadline.h"
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
// ClpRun::status when the deadline passed before CLP started.
constexpr int kNoTimeLeft = 3;

// CbcMain1 keeps its parameters in static state: one call at a time (see above).
std::mutex& cbc_main_mutex() {
  static std::mutex m;
  return m;
}

// CbcMain1's branch and bound first solves the model's LP relaxation with CLP, and stops
// there unless CLP calls it optimal; then it calls its callback with whereFrom 1. The callback
// below keeps CLP's status of that solve (0 optimal, 1 infeasible, 2 unbounded, 3 stopped, 4
// difficulties) where root_status_out points; it is set only while cbc_main_mutex is held.
constexpr int kRootNotSeen = -1;
int* root_status_out = nullptr;

int keep_root_status(CbcModel* model, int where_from) {
  if (where_from == 1 && root_status_out) {
    auto* clp = dynamic_cast<OsiClpSolverInterface*>(model->solver());
    *root_status_out = clp ? clp->getModelPtr()->status() : kRootNotSeen;
  }
  return 0;
}

// CBC's "complete fathoming" (the depthMiniBab mini branch-and-bound inside CLP, on by default)
// dives depth first with no node limit. On a general-integer column with a wide or unbounded
// range it can enumerate millions of nodes: Bench4Opt's model_132, an equality knapsack
// (19161 x0 = 17959 x1 + 10783 x2, x1 and x2 unbounded), took the cbc program 38-66 s and
// 3,011,096 fathoming nodes, and trex 3 s here but more than 60 s on a CI machine. With it off,
// the ordinary search proves the optimum in 12,384 nodes. So it is turned off exactly when such
// a column exists; binary and narrow-range models keep the cbc program's defaults.
constexpr double kWideIntegerRange = 1000;

bool has_wide_general_integer(const Model& model) {
  for (int j = 0; j < model.num_vars(); ++j) {
    const Variable& v = model.var(j);
    if (v.type == VarType::kInteger && !(v.upper - v.lower <= kWideIntegerRange)) return true;
  }
  return false;
}

// CLP's factorization calls LAPACK, which Debian resolves to OpenBLAS; OpenBLAS's worker
// threads then spin (sched_yield) after each call. Measured on Bench4Opt model_100 (27
// columns) on a loaded machine: 3.0 s of wall time in CbcMain1 for 0.07 s of CPU, 1.3 s with
// one BLAS thread. So each CbcMain call runs with one BLAS thread and restores the count
// after (looked up at run time: the lp part does not link OpenBLAS itself).
class OneBlasThread {
 public:
  OneBlasThread() {
    using Get = int (*)();
    auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    set_ = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (get && set_) {
      saved_ = get();
      set_(1);
    }
  }
  ~OneBlasThread() {
    if (set_ && saved_ > 0) set_(saved_);
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  using Set = void (*)(int);
  Set set_ = nullptr;
  int saved_ = 0;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", std::max(s, 0.001));
  return buf;
}

// A CLP limit of what is left of the call's budget, on the wall clock.
void limit_clp(ClpSimplex& clp, const Deadline& deadline) {
  if (!deadline.unlimited()) clp.setMaximumWallSeconds(std::max(deadline.left(), 1e-3));
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
    Deadline deadline(options.time_limit_s);
    SolveResult r;
    if (model.has_quadratic_constraints()) {
      r.status = SolveStatus::kUnsupported;
      r.message = "cbc: quadratic constraints are not supported (no term is ever dropped)";
    } else if (model.has_quadratic_objective() && model.is_mip()) {
      r.status = SolveStatus::kUnsupported;
      r.message = "cbc: integer variables, SOS sets or semi-continuous variables with a quadratic "
                  "objective (MIQP) are not supported";
    } else if (model.has_quadratic_objective()) {
      std::string why;
      if (!objective_is_convex(model, &why)) {
        r.status = SolveStatus::kUnsupported;
        r.message = "cbc: the quadratic objective is not convex for " +
                    std::string(to_string(model.sense)) + " (" + why +
                    "); CLP solves convex QPs only";
      } else {
        r = solve_lp(model, options, deadline);
      }
    } else if (model.is_mip()) {
      r = solve_mip(model, options, deadline);
    } else {
      r = solve_lp(model, options, deadline);
    }
    r.solver = name();
    r.solver_version = version();
    r.seconds = deadline.elapsed();
    return r;
  }

 private:
  struct ClpRun {
    int status = 4;  // CLP's: 0 optimal, 1 infeasible, 2 unbounded, 3 limit, 4+ failed
    bool primal_feasible = false;
    std::vector<double> x;
    double objective = 0;  // minimized form, without the constant
    // Of the minimized form, when status is 0 and the model is an LP (see keep_duals).
    std::vector<double> row_duals, reduced_costs;
  };

  // CLP's row duals and reduced costs after an optimal LP solve (postsolved when presolve ran):
  // of the minimized form, y = d(minimized objective) / d(row bound), d = c - A'y.
  static void keep_duals(const Model& model, ClpSimplex& clp, ClpRun& run) {
    if (run.status != 0 || model.has_quadratic_objective()) return;
    const double* y = clp.dualRowSolution();
    const double* d = clp.dualColumnSolution();
    run.row_duals.assign(y, y + model.num_rows());
    run.reduced_costs.assign(d, d + model.num_vars());
  }

  // One CLP solve with presolve: the dual simplex for an LP, CLP's nonlinear primal for a QP.
  static ClpRun run_clp(const Model& model, const CoinArrays& a, const SolveOptions& options,
                        const Deadline& deadline) {
    ClpRun run;
    if (deadline.passed()) {
      run.status = kNoTimeLeft;
      return run;
    }
    ClpSimplex clp;
    clp.setLogLevel(options.verbose ? 1 : 0);
    load_coin(a, clp);
    bool quadratic = model.has_quadratic_objective();
    if (quadratic) load_hessian(model, a.sign, clp);
    limit_clp(clp, deadline);
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
    run.status = clp.status();
    run.primal_feasible = clp.primalFeasible();
    const double* sol = clp.primalColumnSolution();
    run.x.assign(sol, sol + model.num_vars());
    run.objective = clp.objectiveValue();
    keep_duals(model, clp, run);
    return run;
  }

  // The verdict on a continuous model (or a MILP's relaxation). Presolve and the simplex codes
  // are fast but not to be trusted on a negative verdict: CLP 1.17's dual and primal simplex
  // both call some unbounded LPs infeasible (seen with an unbounded column that is in no row).
  // So "infeasible" or "unbounded" is decided again without presolve: feasibility first, on a
  // zero objective, then boundedness from the feasible basis found.
  static ClpRun lp_verdict(const Model& model, const CoinArrays& a, const SolveOptions& options,
                           const Deadline& deadline) {
    ClpRun run = run_clp(model, a, options, deadline);
    if (run.status != 1 && run.status != 2) return run;
    if (model.has_quadratic_objective()) return run;  // convex QP: primal simplex already
    ClpRun verdict;
    if (deadline.passed()) {
      verdict.status = kNoTimeLeft;
      return verdict;
    }
    // Is there any point? A zero objective answers that reliably.
    ClpSimplex clp;
    clp.setLogLevel(0);
    load_coin(a, clp, /*zero_objective=*/true);
    limit_clp(clp, deadline);
    clp.dual();
    if (clp.status() != 0) {
      verdict.status = clp.status() == 1 ? 1 : clp.status() == 3 ? kNoTimeLeft : kUndecided;
      return verdict;
    }
    // There is: the primal simplex goes on from that feasible basis with the real objective,
    // so it never searches for feasibility again and its verdict on boundedness holds.
    clp.chgObjCoefficients(a.cost.data());
    clp.primal();
    verdict.status = clp.status() == 0 || clp.status() == 2 || clp.status() == 3 ? clp.status() : kUndecided;
    verdict.primal_feasible = true;
    const double* sol = clp.primalColumnSolution();
    verdict.x.assign(sol, sol + model.num_vars());
    verdict.objective = clp.objectiveValue();
    keep_duals(model, clp, verdict);
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
    clp.loadQuadraticObjective(coin_matrix(model.num_vars(), model.num_vars(), rows, cols, vals));
  }

  SolveResult solve_lp(const Model& model, const SolveOptions& options, const Deadline& deadline) const {
    CoinArrays a = to_coin(model);
    ClpRun run = lp_verdict(model, a, options, deadline);
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
    if (r.status == SolveStatus::kOptimal && !model.is_mip()) {
      // CLP solved min sign*c'x, and the model's objective is sign times that: both duals
      // scale by sign (then d = c - A' pi in the model's own sense, as Gurobi defines RC).
      // + 0.0 turns -0 into 0.
      for (double y : run.row_duals) r.duals.push_back(a.sign * y + 0.0);
      for (double d : run.reduced_costs) r.reduced_costs.push_back(a.sign * d + 0.0);
    }
    return r;
  }

  struct CbcRun {
    SolveStatus status = SolveStatus::kError;
    std::vector<double> x;
    double objective = 0;  // minimized form, without the constant
    double bound = 0;
  };

  // The model's SOS sets as CBC branching objects.
  static void add_sos_objects(const Model& model, CbcModel& cbc) {
    if (model.sos.empty()) return;
    std::vector<std::unique_ptr<CbcSOS>> sets;
    std::vector<OsiObject*> objects;
    for (size_t k = 0; k < model.sos.size(); ++k) {
      const SosSet& set = model.sos[k];
      auto obj = std::make_unique<CbcSOS>(&cbc, int(set.vars.size()), set.vars.data(), set.weights.data(),
                                          int(k), set.type);
      obj->setPriority(set.priority);
      objects.push_back(obj.get());
      sets.push_back(std::move(obj));
    }
    cbc.addObjects(int(objects.size()), objects.data());  // copies them
  }

  // One run of CBC's driver over the loaded model with the cbc program's defaults, and the
  // verdict on the LP relaxation: its infeasibility proves the MILP's, and its unboundedness
  // is settled apart, since CBC's own verdict there does not say whether integers fit.
  // CbcMain1 solves the relaxation itself before it branches (see keep_root_status). When CLP
  // called that solve optimal, the relaxation is feasible and bounded on the same evidence
  // lp_verdict would give (a CLP "optimal"), so it is not solved a second time: that second
  // solve took 10-25% of the whole call on small MILPs. Any other root status (or none seen)
  // gets lp_verdict's careful decision, as every MILP did before.
  static CbcRun run_cbc(const Model& model, const CoinArrays& a, const SolveOptions& options,
                        const Deadline& deadline, double time_cap, bool zero_objective, bool preprocess) {
    int root_status = kRootNotSeen;
    CbcRun run = run_cbc_main(model, a, options, deadline, time_cap, zero_objective, preprocess, &root_status);
    if (zero_objective || root_status == 0) return run;
    ClpRun relaxation = lp_verdict(model, a, options, deadline);
    if (relaxation.status == 1) {
      run = CbcRun{};
      run.status = SolveStatus::kInfeasible;
    } else if (relaxation.status == 2) {
      run = CbcRun{};
      run.status = SolveStatus::kUnbounded;  // of the relaxation; the caller decides
    } else if (relaxation.status == kUndecided) {
      run = CbcRun{};
      run.status = SolveStatus::kInfeasibleOrUnbounded;
    }
    return run;  // relaxation optimal or out of time: CBC's own verdict
  }

  static CbcRun run_cbc_main(const Model& model, const CoinArrays& a, const SolveOptions& options,
                             const Deadline& deadline, double time_cap, bool zero_objective, bool preprocess,
                             int* root_status) {
    CbcRun run;
    double seconds = std::min(deadline.left(), time_cap);
    if (seconds <= 0) {
      run.status = SolveStatus::kTimeLimitNoSolution;
      return run;
    }
    OsiClpSolverInterface solver;
    load_coin(a, solver, zero_objective);
    solver.messageHandler()->setLogLevel(options.verbose ? 1 : 0);
    solver.getModelPtr()->setLogLevel(options.verbose ? 1 : 0);

    CbcModel cbc(solver);
    cbc.setLogLevel(options.verbose ? 1 : 0);
    cbc.messageHandler()->setLogLevel(options.verbose ? 1 : 0);
    if (!model.sos.empty()) {
      cbc.findIntegers(false);
      add_sos_objects(model, cbc);
    }
    std::vector<std::string> args = {"trex", "-log", options.verbose ? "1" : "0", "-timeMode", "elapsed"};
    if (std::isfinite(seconds)) args.insert(args.end(), {"-seconds", seconds_text(seconds)});
    // Gap as (incumbent - bound) <= gap * max(1, |incumbent|).
    char gap[32];
    std::snprintf(gap, sizeof gap, "%.17g", options.mip_rel_gap);
    args.insert(args.end(), {"-ratioGap", gap, "-allowableGap", gap});
    // 100 + n: n threads in CBC's deterministic mode.
    if (options.threads > 1) args.insert(args.end(), {"-threads", std::to_string(100 + options.threads)});
    if (!preprocess) args.insert(args.end(), {"-preprocess", "off"});
    if (has_wide_general_integer(model)) args.insert(args.end(), {"-depthMiniBab", "-999"});
    args.insert(args.end(), {"-solve", "-quit"});
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());
    {
      std::lock_guard<std::mutex> lock(cbc_main_mutex());
      root_status_out = root_status;
      OneBlasThread one_blas_thread;
      CbcSolverUsefulData data;
      CbcMain0(cbc, data);
      // CbcMain0 resets the log levels it finds; quiet again unless asked.
      cbc.setLogLevel(options.verbose ? 1 : 0);
      cbc.solver()->messageHandler()->setLogLevel(options.verbose ? 1 : 0);
      CbcMain1(int(argv.size()), argv.data(), cbc, keep_root_status, data);
      root_status_out = nullptr;
    }

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
    } else if (cbc.isSecondsLimitReached() || deadline.passed()) {
      run.status = best ? SolveStatus::kTimeLimitFeasible : SolveStatus::kTimeLimitNoSolution;
    } else if (cbc.isProvenOptimal()) {
      run.status = SolveStatus::kInfeasible;  // search finished with no solution
    } else {
      run.status = SolveStatus::kError;
    }
    return run;
  }

  SolveResult solve_mip(const Model& model, const SolveOptions& options, const Deadline& deadline) const {
    CoinArrays a = to_coin(model);
    CbcRun run = run_cbc(model, a, options, deadline, kInf, false, /*preprocess=*/true);
    if (has_solution(run.status) && model.max_violation(run.x) > kFeasibilityCheckTolerance) {
      // Seen with CBC 2.10.8: when CGL preprocessing reduces a model to nothing, CBC reports
      // "no integer variables" and hands back the LP relaxation as optimal. Every answer is
      // checked against the model, and a wrong one is solved again without preprocessing,
      // within what is left of the time budget.
      run = run_cbc(model, a, options, deadline, kInf, false, /*preprocess=*/false);
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
      double cap = std::min(deadline.left(), kFeasibilityCheckSeconds);
      CbcRun feasible = run_cbc(model, a, options, deadline, cap, /*zero_objective=*/true, /*preprocess=*/false);
      r.status = has_solution(feasible.status)                 ? SolveStatus::kUnbounded
                 : feasible.status == SolveStatus::kInfeasible ? SolveStatus::kInfeasible
                                                               : SolveStatus::kInfeasibleOrUnbounded;
      if (r.status == SolveStatus::kInfeasibleOrUnbounded)
        r.message = "cbc: the LP relaxation is unbounded; no integer point was found or ruled out in " +
                    seconds_text(cap) + " s";
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
      if (model.var(j).semicontinuous && std::fabs(v) <= kIntegralityTolerance) v = 0;
    }
    r.x = std::move(run.x);
    // The objective of the solution returned, not CBC's getObjValue(): after its preprocessing
    // CBC 2.10.8 can report a value its own best solution does not have (-3.00001 for a
    // solution of value 1, tests/lp/cbc_solver_test.cc TheObjectiveIsTheSolutionsOwn). The
    // objective here is linear (MIQP is refused above); columns past the model's have cost 0.
    double objective = 0;
    for (int j = 0; j < model.num_vars(); ++j) objective += a.cost[size_t(j)] * r.x[size_t(j)];
    r.objective = a.sign * objective + model.objective_constant;
    r.best_bound = a.sign * run.bound + model.objective_constant;
    return r;
  }
};

}  // namespace

std::unique_ptr<Solver> make_cbc_solver() { return std::make_unique<CbcSolver>(); }

}  // namespace trex::lp
