// AdamW with its whole state in memory: fp32 master weights and both moments, 12 bytes per
// parameter, stepped by the fused kernel (kernels/adamw.h) group by group. The baseline the swap
// optimizer must match byte for byte.
#pragma once

#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/optim/optimizer.h"

namespace trex::optim {

class AdamW : public Optimizer {
 public:
  // master: the initial fp32 weights, [sum of group sizes]; the moments start at zero.
  // pool: the compute pool (nullptr: core::default_thread_pool()).
  AdamW(std::vector<ParamGroup> groups, const float* master, core::ThreadPool* pool = nullptr);

  void step(const float* grads, core::bf16* weights) override;
  // step(), and the updated fp32 master weights written to master_copy [num_params()] in the
  // same pass: what step() then read_state(kMaster, 0, num_params(), master_copy) give, in one
  // pass over the state instead of two (v4-micro: the copy alone was 21 ms a step on one thread).
  void step_and_copy_master(const float* grads, core::bf16* weights, float* master_copy);
  // step(), and the updated bf16 weights also written widened to fp32 to widened [num_params()]
  // in the same pass: what step() then core::bf16_to_fp32(weights, widened, num_params()) give
  // (trex train's model computes with the bf16-rounded weights in its fp32 parameters; with one
  // rank this replaces the widening pass over all of them after each step).
  void step_and_widen_weights(const float* grads, core::bf16* weights, float* widened);
  void read_state(StateArray which, int64_t offset, int64_t count, float* dst) override;

 protected:
  void write_state(int64_t offset, int64_t count, const float* master, const float* exp_avg,
                   const float* exp_avg_sq) override;

 private:
  // One step; master_copy and widened may each be nullptr.
  void step_writing(const float* grads, core::bf16* weights, float* master_copy, float* widened);

  core::ThreadPool* pool_;
  AccountedBuffer state_[3];  // master, exp_avg, exp_avg_sq
};

}  // namespace trex::optim
