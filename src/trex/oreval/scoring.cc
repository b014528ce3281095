// Answer comparison modes and error classes; the conventions are listed in scoring.h.
#include "trex/oreval/scoring.h"

#include <cmath>

#include "trex/util/error.h"

namespace trex::oreval {

const char* to_string(Comparator c) {
  switch (c) {
    case Comparator::kAbsolute: return "absolute";
    case Comparator::kOrlm: return "orlm";
    case Comparator::kSirl: return "sirl";
    case Comparator::kResocratic: return "resocratic";
  }
  return "?";
}

std::vector<std::string> comparator_names() { return {"absolute", "orlm", "sirl", "resocratic"}; }

Comparator comparator_from_string(const std::string& name) {
  for (Comparator c : {Comparator::kAbsolute, Comparator::kOrlm, Comparator::kSirl, Comparator::kResocratic})
    if (name == to_string(c)) return c;
  throw InputError::field("--mode", "unknown mode '" + name + "' (absolute, orlm, sirl, resocratic)");
}

bool values_match(double p, double g, Comparator mode) {
  if (!std::isfinite(p) || !std::isfinite(g)) return false;
  switch (mode) {
    case Comparator::kAbsolute: return std::fabs(p - g) <= 1e-6;
    case Comparator::kOrlm: {
      double rp = std::round(p), rg = std::round(g);
      if (rg == 0) return rp == 0;
      return std::fabs(rp - rg) <= 0.05 * std::fabs(rg);
    }
    case Comparator::kSirl: return std::fabs(p - g) / (std::fabs(g) + 1) <= 1e-6;
    case Comparator::kResocratic: return std::fabs(p - g) <= 1e-4;
  }
  return false;
}

const char* to_string(ErrorClass e) {
  switch (e) {
    case ErrorClass::kNoCode: return "no-code";
    case ErrorClass::kSyntaxError: return "syntax-error";
    case ErrorClass::kRuntimeError: return "runtime-error";
    case ErrorClass::kTimeout: return "timeout";
    case ErrorClass::kInfeasible: return "infeasible";
    case ErrorClass::kWrongObjective: return "wrong-objective";
    case ErrorClass::kWrongStructure: return "wrong-structure";
    case ErrorClass::kCorrect: return "correct";
    case ErrorClass::kUnbounded: return "unbounded";
    case ErrorClass::kUnsupportedLibrary: return "unsupported-library";
    case ErrorClass::kUnsupportedCall: return "unsupported-call";
  }
  return "?";
}

ErrorClass classify_solution(lp::SolveStatus status, double objective, const Answer& answer, Comparator mode,
                             bool lenient_status) {
  using lp::SolveStatus;
  bool infeasible = status == SolveStatus::kInfeasible;
  bool unbounded = status == SolveStatus::kUnbounded;
  bool undecided = status == SolveStatus::kInfeasibleOrUnbounded;
  auto match = [](bool yes) { return yes ? ErrorClass::kCorrect : ErrorClass::kWrongObjective; };
  switch (answer.kind) {
    case AnswerKind::kInfeasible: return match(infeasible || (undecided && lenient_status));
    case AnswerKind::kUnbounded: return match(unbounded || (undecided && lenient_status));
    case AnswerKind::kNoSolution: return match(infeasible || unbounded || undecided);
    case AnswerKind::kNone: return ErrorClass::kWrongObjective;  // nothing to match
    case AnswerKind::kNumber: break;
  }
  if (status == SolveStatus::kTimeLimitNoSolution) return ErrorClass::kTimeout;
  if (infeasible || undecided) return ErrorClass::kInfeasible;
  if (unbounded) return ErrorClass::kUnbounded;
  if (!lp::has_solution(status)) return ErrorClass::kRuntimeError;  // unsupported or solver error
  return values_match(objective, answer.value, mode) ? ErrorClass::kCorrect : ErrorClass::kWrongObjective;
}

}  // namespace trex::oreval
