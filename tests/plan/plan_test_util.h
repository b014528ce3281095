// Shared helpers of the plan tests: shipped configs by name, a small synthetic cluster.
#pragma once

#include <string>

#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/strategy.h"

namespace trex::plan::testing {

inline std::string source_path(const std::string& rel) { return std::string(TREX_SOURCE_DIR) + "/" + rel; }

inline model::ModelConfig shipped_model(const std::string& name) {
  return model::load_model_config(source_path("configs/model/" + name + ".toml"));
}

inline Cluster shipped_cluster(const std::string& name) { return load_cluster(source_path("configs/cluster/" + name + ".toml")); }

inline Run make_run(long seq, long global_batch, long micro_batch = 1) {
  Run r;
  r.seq_len = seq;
  r.global_batch = global_batch;
  r.micro_batch = micro_batch;
  return r;
}

}  // namespace trex::plan::testing
