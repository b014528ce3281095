// The training loop: a V4 transformer trained on packed, tokenized data with AdamW (in memory
// or swapped to a file), mixed precision, clipping, a NaN guard, checkpoints and metrics.
//
// One step:
//   1. data:      micro_batches batches of rows x seq tokens from the packer
//   2. gradients: zero, forward_backward per micro-batch with grad_scale 1 / (counted tokens of
//                 the whole step), so micro-batches sum to the mean over the step
//   3. guard:     loss or global gradient norm not finite: the step is skipped (no update, no
//                 routing-bias change, reported in metrics); nan_limit in a row stop the run
//   4. clip:      grads *= clip_norm / norm when norm > clip_norm (clip_with "previous": the
//                 norm of the last step not skipped, so the scale is known before the backward;
//                 the step's own norm while there is none, i.e. at the first step)
//   5. update:    lr from the schedule into every group (set_lr), optimizer step writing bf16
//                 weights, copied back into the model's fp32 parameters: the model computes
//                 with bf16-rounded weights, the optimizer keeps fp32 master weights
//   6. routing:   update_routing_bias() from this step's expert load
// The initial parameters are rounded to bf16 the same way before step 1.
//
// The swap optimizer (swap_overlap, the default) runs step 5 inside step 2: it starts reading
// its state at the start of the step, and during the last round's backward each range of this
// rank's parameters whose step gradient is final is handed to it (model::Transformer's
// gradient-final hook -> dist::StepReducer::stream_round: in one process as soon as the range
// is added into the step's gradient; under mpirun once every rank's piece of the range has
// arrived and been summed), so it updates chunks while the layers below are still in backward;
// the update is committed after the guard. Skipped steps discard it;
// with clip_with "current" (and "previous" at its first step) a step whose norm exceeds
// clip_norm discards it and runs again, clipped, after the backward (exposed). Weights and state are bitwise those of steps 2-6.
//
// Parallel runs (options.dist): step 2 runs this rank's micro-batches (dist::StepReducer), the
// gradient and the loss are summed over the ranks in micro-batch order, and the expert load
// over the ranks; every rank then takes the same optimizer step. Each micro-batch's gradient is
// computed alone and added into the step's gradient in order, in one process too, so the
// losses and weights of a run do not depend on its layout.
//
// Determinism: with the same config, seed and thread count, a run gives the same losses and
// weight bytes every time, and a run resumed from a checkpoint continues bit for bit (the data
// position, the optimizer state and the routing state are all in the checkpoint; the schedule
// is a function of the step).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "trex/core/trace.h"
#include "trex/dist/context.h"
#include "trex/train/config.h"

namespace trex::train {

struct TrainOptions {
  std::string out_dir;          // the run directory (created)
  int64_t steps = 0;            // > 0: overrides the config's steps (and the schedule's length)
  int64_t stop_after = 0;       // > 0: stop once this step is done (the schedule still spans
                                // all steps); for interrupting a run in tests
  std::string resume;           // a checkpoint or run directory to continue from
  std::string trace_path;       // write the Chrome trace JSON here (PATH.rankR.EXT per rank when distributed)
  double peak_flops = 0;        // fp32 peak of the machine for MFU; 0: MFU not reported
  std::string peak_source;      // where the peak came from (printed)
  bool progress = true;         // a progress bar on stderr
  bool print = true;            // log lines and the summary on stdout
  // A parallel run (docs/dist.md): this rank's place in it. nullptr: this process alone. Every
  // rank calls run_training with the same config and options; rank 0 alone writes the run
  // directory (tokenizer, metrics, checkpoints, loss curve) and prints.
  dist::Context* dist = nullptr;
  bool fingerprints = false;    // TrainResult::fingerprints wanted (tests)
};

struct TrainResult {
  int64_t first_step = 0;       // the first step this call ran
  int64_t last_step = 0;        // the last step done
  std::vector<double> losses;   // per step run by this call (NaN for a non-finite loss)
  std::vector<bool> skipped;
  int64_t skipped_steps = 0;
  double tokens_per_s = 0;      // over the steps of this call
  double mfu = 0;
  double median_step_s = 0;
  double median_optimizer_s = 0;  // after the backward: what the optimizer adds to a step
  // The swap optimizer's I/O (zero for AdamW), medians over the steps of this call, and the
  // steps whose overlapped update was redone (clipping with the current norm).
  double median_swap_io_s = 0, median_swap_exposed_s = 0, median_swap_hidden_s = 0;
  // Under mpirun: every rank's medians, in rank order (the fields above are this rank's).
  std::vector<double> median_swap_rank_io_s, median_swap_rank_exposed_s;
  int64_t swap_redone_steps = 0;
  int64_t tokens = 0;
  int vocab_used = 0;           // the tokenizer's vocabulary
  std::string checkpoint;       // the last checkpoint written
  core::TraceSummary trace;
  // With TrainOptions::fingerprints: per step run, a 64-bit FNV-1a hash of the weights and the
  // routing biases after the step (ranks of a parallel run compare theirs).
  std::vector<uint64_t> fingerprints;
};

// The NaN guard stopped the run (guard.nan_limit non-finite steps in a row).
class TrainingStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs (or resumes) training. Throws InputError for bad input, TrainingStopped when the NaN
// guard stops the run.
TrainResult run_training(const TrainConfig& config, const TrainOptions& options);

}  // namespace trex::train
