// Making one sample from its index: choose, generate, solve, render, reconstruct, check.
//
// A sample depends only on the config and its index (its random stream is keyed by the run
// seed and the index), never on the thread or process that makes it. One SampleBuilder per
// thread keeps its solver objects for every sample it builds (lp::BatchSolver: one CLP
// reused for LPs and for the nodes of small MILPs, CBC for what it cannot prove).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trex/lp/batch_solver.h"
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
  lp::BatchSolver batch_;                // the reference solves, one solver object for every sample
  std::unique_ptr<lp::Solver> resolver_;  // re-solves a reconstruction that differs from the reference
  std::vector<double> cumulative_;  // family weights, cumulated
};

}  // namespace trex::ordata
