// Comparing a solved model with the benchmark's answer, under named conventions.
//
//   absolute   |pred - gt| <= 1e-6                      (the T-Rex report; the default)
//   orlm       round both to integers, then |p - g| <= 0.05 |g| (ORLM, OptMATH; p == g when g == 0)
//   sirl       |pred - gt| / (|gt| + 1) <= 1e-6
//   resocratic |pred - gt| <= 1e-4
//
// Feasibility status is compared too: an "infeasible" answer is matched by an infeasible
// model, "unbounded" by an unbounded one, "no solution" by either or by the solver's
// "infeasible or unbounded". That undecided status matches an "infeasible" or "unbounded"
// answer only in the lenient status mode (`--lenient-status`), which says so in the report.
// Against a numeric answer an infeasible model is class `infeasible`, an unbounded one class
// `unbounded`, an undecided one `infeasible` (its message says which status it was).
#pragma once

#include <string>
#include <vector>

#include "trex/lp/solver.h"
#include "trex/oreval/benchmark.h"

namespace trex::oreval {

enum class Comparator { kAbsolute, kOrlm, kSirl, kResocratic };
const char* to_string(Comparator c);
// Throws InputError::field("--mode") for an unknown name.
Comparator comparator_from_string(const std::string& name);
std::vector<std::string> comparator_names();

bool values_match(double predicted, double reference, Comparator mode);

// The error classes of the per-item report (stable names; they are written to JSONL).
enum class ErrorClass {
  kNoCode, kSyntaxError, kRuntimeError, kTimeout, kInfeasible, kWrongObjective, kWrongStructure, kCorrect, kUnbounded,
  kUnsupportedLibrary,  // the program needs a modelling library trex does not emulate
  kUnsupportedCall,     // it calls outside the emulated surface (not the model's own error)
};
const char* to_string(ErrorClass e);

// The class of a solved model against a numeric or status answer.
// `lenient_status`: "infeasible or unbounded" also matches an infeasible or unbounded answer.
ErrorClass classify_solution(lp::SolveStatus status, double objective, const Answer& answer, Comparator mode,
                             bool lenient_status = false);

}  // namespace trex::oreval
