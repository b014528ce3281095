// One corpus sample: the instance rendered, reconstructed, solved and checked.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"
#include "trex/ordata/dedup.h"
#include "trex/ordata/contract.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

// Rejection reasons, by name as they appear in manifests. New reasons go last.
namespace reason {
inline constexpr const char* kSolverFailed = "solver_failed";            // error, unsupported or time limit
inline constexpr const char* kFeasibilityMismatch = "feasibility_mismatch";  // status is not the requested mode
inline constexpr const char* kLpParse = "lp_parse_error";
inline constexpr const char* kGurobipyParse = "gurobipy_parse_error";
inline constexpr const char* kContract = "contract_violation";           // variable counts, types, bounds
inline constexpr const char* kDirection = "direction_mismatch";
inline constexpr const char* kUnstatedCoefficient = "unstated_coefficient";
inline constexpr const char* kUnusedNumber = "unused_number";
inline constexpr const char* kAnswerLeak = "answer_leak";
inline constexpr const char* kStatusMismatch = "status_mismatch";
inline constexpr const char* kObjectiveMismatch = "objective_mismatch";
inline constexpr const char* kCertificate = "certificate_failed";
inline constexpr const char* kDuplicateExact = "duplicate_exact";
inline constexpr const char* kDuplicateNear = "duplicate_near";
inline constexpr const char* kDuplicateStructural = "duplicate_structural";
}  // namespace reason

struct Check {
  std::string name;    // "lp_parses", "reviewer", ...
  std::string result;  // "pass", or what failed
};

struct Sample {
  uint64_t index = 0;  // candidate index in the run
  std::string id;
  std::string family, industry, template_name, variant;  // variant: "full" or "concise"
  uint64_t seed = 0;  // the sample's own stream key (run seed, index)
  FeasibilityMode mode = FeasibilityMode::kFeasible;
  std::vector<std::pair<std::string, double>> params;
  std::vector<double> implied_numbers;  // derived coefficients the reviewer allows (family.h)
  std::string family_version;
  std::string statement;
  Formulations formulations;
  lp::SolveStatus status = lp::SolveStatus::kError;
  double objective = 0;
  std::vector<std::pair<std::string, double>> solution;  // nonzero values, in variable order
  std::string solver, solver_version;
  std::vector<Check> checks;
  std::string rejection;  // "" when the sample passed every gate
  std::string rejection_detail;
  lp::Model model;        // the reference model, for dedup (not exported)
  Story story;            // what the statement was rendered from (not exported)
  Fingerprint fingerprint;  // for dedup, filled for samples that passed the checks
};

// Seconds spent per stage, summed over samples (CPU time of the worker threads).
struct StageTimes {
  double generate = 0, solve = 0, render = 0, verify = 0, dedup = 0, write = 0;
  StageTimes& operator+=(const StageTimes& o);
};

}  // namespace trex::ordata
