// Published training runs re-predicted by the planner (configs/validation/*.toml, format in
// docs/plan.md): each file states the model (a config path or inline tables), the cluster and
// node count, the run, the strategy, and the reported figure with its source and the FLOP
// convention that source used. The error is predicted / reported - 1 on throughput (MFU under
// the source's convention, or tokens/s per device, which is the same ratio).
#pragma once

#include <string>
#include <vector>

#include "trex/model/accounting.h"
#include "trex/plan/predict.h"

namespace trex::plan {

struct ValidationCase {
  std::string name;
  std::string file;
  std::string source;
  std::string notes;
  model::ModelConfig model;
  Cluster cluster;
  Run run;
  Strategy strategy;
  model::FlopConvention convention = model::FlopConvention::kMegatron;
  double reported_mfu = 0;                 // under `convention`, 0 when given as tokens/s
  double reported_tokens_per_s_device = 0; // 0 when given as MFU
};

struct ValidationResult {
  ValidationCase c;
  Prediction prediction;
  double predicted = 0;  // in the reported unit
  double reported = 0;
  double error = 0;      // predicted / reported - 1
  bool mfu = true;       // unit: MFU (true) or tokens/s per device
};

ValidationCase load_validation_case(const std::string& path);
// Every *.toml under dir, sorted by name.
std::vector<ValidationCase> load_validation_dir(const std::string& dir);
ValidationResult evaluate(const ValidationCase& c);

}  // namespace trex::plan
