// Strategy search: enumerate the layouts of a model on a cluster for a run, refuse the invalid
// ones (the checks of complete_and_check), prune by memory, rank the rest by predicted step
// time.
//
// Enumerated: TP over divisors of the heads up to one node; CP over powers of two up to 16
// dividing the sequence; PP over divisors of what remains (at most the layer count); VPP 1, 2,
// 4 where the layers and micro-batches allow; EP over divisors of the routed experts that the
// folding invariant admits; ETP 1, 2, 4, 8 inside a node; recomputation none, selective, full;
// the swap optimizer off and (where the cluster states host figures) on. Every other strategy
// field (ZeRO stage, overlap shares, grouped GEMM...) comes from a base strategy.
//
// Pruning, stated so the result can be trusted: a layout whose lightest-memory variant (full
// recomputation, swap on) does not fit is dropped with all its variants; at a given
// recomputation, swap-on is skipped when swap-off fits (it only adds transfer time); a heavier
// recomputation is skipped once a lighter one fits without swap (it only adds compute).
#pragma once

#include <vector>

#include "trex/plan/predict.h"

namespace trex::plan {

struct SearchOptions {
  int top_k = 5;
  Strategy base;       // fields not searched
  long max_tp = 0;     // 0: devices per node
  bool allow_swap = true;  // consider the swap optimizer (where the cluster states host figures)
};

struct SearchResult {
  std::vector<Prediction> top;  // best first, all fitting
  long layouts = 0;             // (tp, cp, pp, vpp, ep, etp) combinations considered
  long refused = 0;             // refused by the strategy checks
  long pruned_memory = 0;       // layouts dropped because no variant fits
  long evaluated = 0;           // predictions made
  long fitting = 0;             // predictions that fit
};

SearchResult search(const model::ModelConfig& m, const Cluster& c, const Run& run, const SearchOptions& o);

}  // namespace trex::plan
