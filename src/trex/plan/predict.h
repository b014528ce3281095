// The planner's prediction for one (model, cluster, run, strategy): memory per device against
// capacity, and the time of one training step with its breakdown and MFU under every named
// FLOP convention. The model is analytic; every rule it applies is stated in docs/plan.md and
// beside the code that applies it.
#pragma once

#include <string>
#include <vector>

#include "trex/model/accounting.h"
#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/strategy.h"

namespace trex::plan {

// Bytes on one device (the pipeline rank with the largest total).
struct MemoryBreakdown {
  int pipeline_rank = 0;
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;      // fp32 master + moments resident on the device (swap: the slots)
  double activations = 0;    // saved for backward, all in-flight micro-batches
  double logits = 0;         // fp32 logits and their gradient (last stage)
  double comm_buffers = 0;   // all-to-all and TP gather buffers
  double reserved = 0;       // runtime and allocator reserve (cluster file)
  double host_state = 0;     // swapped optimizer state in host memory (per device)
  double total() const { return weights + gradients + optimizer + activations + logits + comm_buffers + reserved; }
  double capacity = 0;
  bool fits = false;
  bool host_fits = true;
};

// Seconds per step on the slowest device; the parts add up to step_s.
struct TimeBreakdown {
  double compute = 0;      // GEMMs, attention, vector kernels at their roofline, recomputation included
  double recompute = 0;    // the share of `compute` spent recomputing activations
  double launch = 0;       // time added by the per-kernel launch floor (the fragmented tail)
  double tp_comm = 0;      // exposed TP all-gather / reduce-scatter
  double cp_comm = 0;      // exposed context-parallel KV exchange
  double ep_comm = 0;      // exposed EP all-to-all (and ETP gather/scatter)
  double pp_comm = 0;      // pipeline point-to-point
  double bubble = 0;       // pipeline fill and drain
  double dp_comm = 0;      // exposed gradient reduction and parameter gather
  double optimizer = 0;    // AdamW on the device, or the exposed swap-optimizer transfer
  double straggler = 0;    // waiting for the slowest of N devices (scale_losses.h)
  double overhead = 0;     // the stack's per-step work the model does not list (stack.h)
  double step = 0;
  double comm() const { return tp_comm + cp_comm + ep_comm + pp_comm + dp_comm; }
};

struct MfuFigure {
  model::FlopConvention convention;
  double flops_per_token = 0;
  double mfu = 0;
};

struct Prediction {
  Strategy strategy;          // completed (dp, edp)
  long micro_batches = 0;     // per step per data-parallel rank
  long tokens_per_step = 0;
  MemoryBreakdown memory;
  TimeBreakdown time;
  double tokens_per_s = 0;
  double hardware_flops_per_token = 0;  // what the devices execute (recomputation included), forward + backward
  std::vector<MfuFigure> mfu;
  // Transformer layers on each pipeline rank, as the prediction placed its chunks (chunk
  // v * pp + r on rank r); pp entries.
  std::vector<long> rank_layers;
  double mfu_of(model::FlopConvention c) const;
  // Swap optimizer detail (zero when off).
  double swap_serial_s = 0;   // load + update + store with no overlap
  double swap_overlapped_s = 0;
};

// Checks the strategy (throws InputError with the reason) and predicts.
Prediction predict(const model::ModelConfig& m, const Cluster& c, const Run& run, Strategy s);

// The stated assumptions behind every prediction, one per line, for reports.
std::vector<std::string> model_assumptions();

}  // namespace trex::plan
