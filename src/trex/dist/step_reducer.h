// The gradient of one training step over every rank, summed in the order a single process
// would sum it, so that a parallel run reproduces the single-process run bit for bit.
//
// A step of M micro-batches runs in M / world rounds; in round j rank r runs micro-batch
// k = j world + r, with the model's gradients zeroed first. After each round add_round()
// gathers every rank's gradient of its micro-batch (MPI_Allgather: bytes, no arithmetic) and
// adds them into the step's gradient in micro-batch order, acc += g_k; the single process does
// exactly that, one micro-batch at a time. Routed experts under expert (and expert-tensor)
// parallelism: the gradient of expert e (each width shard of it) for micro-batch k was computed
// by its owner in k's rank's expert group from k's rows alone (MoeLayer::source_grads), and is
// added at the same place in the order; every element has one owner, so its chain of additions
// over the micro-batches is the single process's. The result is
// identical on every rank and for every (dp, ep) layout, so every rank runs the same optimizer
// step and holds the same weights, and a checkpoint written under one layout resumes under any
// other bit for bit. With etp > 1 the MoE layers' outputs and input gradients are sums of
// shard partials (model/moe.h), equal to the single process's up to rounding; every layout with
// the same etp still gives the same bits.
//
// The losses (ce_sum) are gathered and added in the same order; the expert load is summed over
// ranks with one integer all-reduce per step (exact), so the balancing bias moves identically
// on every rank.
//
// Cost: each round moves world x (parameters + this rank's expert gradients) floats into every
// rank, more than a ring all-reduce's 2 x parameters for world > 2; the price of the order.
#pragma once

#include <cstdint>
#include <vector>

#include "trex/dist/context.h"
#include "trex/model/transformer.h"

namespace trex::dist {

class StepReducer {
 public:
  StepReducer(Context& context, model::Transformer& model);

  // Rounds per step of M micro-batches, and the micro-batch this rank runs in round j.
  int64_t rounds(int64_t micro_batches) const { return micro_batches / context_.world_size(); }
  int64_t micro_batch(int64_t round) const { return round * context_.world_size() + context_.rank(); }

  void begin_step();
  // After this rank's forward_backward of the round (st: its loss statistics). Collective.
  void add_round(const model::LossStats& st);
  // After the last round: sums the step's expert load over the ranks. Collective.
  void finish_step();

  float* gradient() { return acc_.data(); }  // [parameters]
  double ce_sum() const { return ce_; }
  const std::vector<std::vector<int64_t>>& expert_load() const { return load_; }
  // Bytes one rank receives per round (for the metrics).
  int64_t bytes_per_round() const;

 private:
  struct ExpertSlot {  // where one local expert's w1, w2, w3 live in the flat gradient
    int64_t w1 = 0, w2 = 0, w3 = 0;
  };
  Context& context_;
  model::Transformer& model_;
  int64_t n_ = 0;         // parameters
  int64_t extra_ = 0;     // floats of expert source gradients per rank
  std::vector<int64_t> layer_extra_offset_;            // per MoE layer, into the extra part
  std::vector<std::vector<ExpertSlot>> slots_;         // [layer][global expert]
  std::vector<float> acc_, send_, recv_;
  double ce_ = 0;
  std::vector<std::vector<int64_t>> load_;
};

}  // namespace trex::dist
