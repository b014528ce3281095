// Making one sample from its index: choose, generate, solve, render, reconstruct, check.
//
// A sample depends only on the config and its index (its random stream is keyed by the run
// seed and the index), never on the thread or process that makes it. One SampleBuilder per
// thread keeps its solver objects for every sample it builds.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trex/lp/solver.h"
#include "trex/ordata/config.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

inline constexpr const char* kGeneratorName = "trex-ordata";
inline constexpr const char* kGeneratorVersion = "1.0";

class SampleBuilder {
 public:
  // REQUIRES: finalize_config(config) has run; config outlives the builder.
  explicit SampleBuilder(const CorpusConfig& config);
  Sample build(uint64_t index, StageTimes& times);

 private:
  const CorpusConfig& config_;
  std::unique_ptr<lp::Solver> solver_;
  std::vector<double> cumulative_;  // family weights, cumulated
};

}  // namespace trex::ordata
