#include "trex/optim/adamw.h"

#include <cstring>
#include <stdexcept>

namespace trex::optim {

AdamW::AdamW(std::vector<ParamGroup> groups, const float* master, core::ThreadPool* pool)
    : Optimizer(std::move(groups)), pool_(pool) {
  size_t n = size_t(num_params_);
  for (AccountedBuffer& b : state_) b = AccountedBuffer(&memory_, n);
  std::memcpy(state_[0].data(), master, n * sizeof(float));
  std::memset(state_[1].data(), 0, n * sizeof(float));
  std::memset(state_[2].data(), 0, n * sizeof(float));
}

void AdamW::step(const float* grads, core::bf16* weights) {
  step_writing(grads, weights, nullptr, nullptr);
}

void AdamW::step_and_copy_master(const float* grads, core::bf16* weights, float* master_copy) {
  step_writing(grads, weights, master_copy, nullptr);
}

void AdamW::step_and_widen_weights(const float* grads, core::bf16* weights, float* widened) {
  step_writing(grads, weights, nullptr, widened);
}

void AdamW::step_writing(const float* grads, core::bf16* weights, float* master_copy,
                         float* widened) {
  std::vector<kernels::AdamWScalars> sc = scalars_for(step_ + 1);
  for (size_t g = 0; g < groups_.size(); ++g) {
    int64_t o = offsets_[g];
    kernels::adamw_update(sc[g], state_[0].data() + o, state_[1].data() + o,
                          state_[2].data() + o, grads + o, weights ? weights + o : nullptr,
                          groups_[g].size, pool_, master_copy ? master_copy + o : nullptr,
                          widened ? widened + o : nullptr);
  }
  ++step_;
}

void AdamW::read_state(StateArray which, int64_t offset, int64_t count, float* dst) {
  if (offset < 0 || count < 0 || offset + count > num_params_)
    throw std::out_of_range("AdamW::read_state: range outside the parameters");
  std::memcpy(dst, state_[int(which)].data() + offset, size_t(count) * sizeof(float));
}

void AdamW::write_state(int64_t offset, int64_t count, const float* master, const float* exp_avg,
                        const float* exp_avg_sq) {
  size_t bytes = size_t(count) * sizeof(float);
  std::memcpy(state_[0].data() + offset, master, bytes);
  std::memcpy(state_[1].data() + offset, exp_avg, bytes);
  std::memcpy(state_[2].data() + offset, exp_avg_sq, bytes);
}

}  // namespace trex::optim
