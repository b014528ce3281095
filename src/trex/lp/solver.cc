#include "trex/lp/solver.h"

#include "trex/util/error.h"

namespace trex::lp {

const char* to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::kOptimal: return "optimal";
    case SolveStatus::kInfeasible: return "infeasible";
    case SolveStatus::kUnbounded: return "unbounded";
    case SolveStatus::kInfeasibleOrUnbounded: return "infeasible_or_unbounded";
    case SolveStatus::kTimeLimitFeasible: return "time_limit_feasible";
    case SolveStatus::kTimeLimitNoSolution: return "time_limit_no_solution";
    case SolveStatus::kUnsupported: return "unsupported";
    case SolveStatus::kError: return "error";
  }
  return "error";
}

bool has_solution(SolveStatus s) {
  return s == SolveStatus::kOptimal || s == SolveStatus::kTimeLimitFeasible;
}

std::vector<std::string> solver_names() { return {"auto", "cbc", "sbb", "glpk"}; }

std::unique_ptr<Solver> make_solver(const std::string& name) {
  if (name == "auto") return make_auto_solver();
  if (name == "cbc") return make_cbc_solver();
  if (name == "sbb") return make_spatial_solver();
  if (name == "glpk") return make_glpk_solver();
  std::string known;
  for (const auto& n : solver_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError::field("--solver", "unknown solver '" + name + "' (known: " + known + ")");
}

}  // namespace trex::lp
