// The MFU ladder: a scenario file (configs/plan/*.toml) that walks one model on one cluster
// from a baseline recipe to an optimized one, rung by rung, and prints the predicted MFU of
// each beside the figures a report gives. Each rung states its strategy (or asks the search for
// the best one under its constraints), any efficiency factors it changes, and the assumptions
// it rests on, in words that the report prints.
#pragma once

#include <string>
#include <vector>

#include "trex/plan/predict.h"

namespace trex::plan {

struct LadderRung {
  std::string name;
  std::string assumptions;
  Strategy strategy;        // the layout, or the fixed fields when `search` is set
  bool search = false;      // take the best strategy `trex plan search` finds
  bool allow_swap = false;  // for search: may use the swap optimizer
  Efficiency efficiency;    // the cluster's factors with this rung's overrides
  double reported_mfu = 0;  // the report's figure for this rung (0: none given)
};

struct Ladder {
  std::string name;
  std::string source;
  std::string file;
  model::ModelConfig model;
  Cluster cluster;
  Run run;
  model::FlopConvention convention = model::FlopConvention::kTrex;
  std::vector<LadderRung> rungs;
};

struct RungResult {
  LadderRung rung;
  Prediction prediction;
};

Ladder load_ladder(const std::string& path);
std::vector<RungResult> run_ladder(const Ladder& ladder);

}  // namespace trex::plan
