#include "trex/dist/step_reducer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"

namespace trex::dist {
namespace {

// dst[i] += src[i], in parallel over elements (each element's order is unchanged).
void add_into(float* dst, const float* src, int64_t n) {
  core::default_thread_pool().parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dst[i] += src[i];
  });
}

// dst [rows, ld] columns [0, cols) += src [rows, cols] (an expert-tensor shard of a W2).
void add_columns(float* dst, int64_t ld, const float* src, int64_t rows, int64_t cols) {
  core::default_thread_pool().parallel_for(0, rows, std::max<int64_t>(1, (1 << 16) / cols), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t i = 0; i < cols; ++i) dst[r * ld + i] += src[r * cols + i];
  });
}

}  // namespace

StepReducer::StepReducer(Context& context, model::Transformer& model) : context_(context), model_(model) {
  n_ = model.layout().total;
  const model::ModelConfig& c = model.config();
  const int layers = model.moe_layers();
  load_.assign(size_t(layers), std::vector<int64_t>(size_t(c.ffn.routed_experts), 0));
  if (context.expert_exchange() != nullptr) {
    slots_.resize(size_t(layers));
    for (int i = 0; i < layers; ++i) {
      layer_extra_offset_.push_back(extra_);
      extra_ += int64_t(model.moe_source_grads(i).size());
      for (int e = 0; e < c.ffn.routed_experts; ++e) {
        const std::string ex = model.moe_prefix(i) + "ffn.experts." + std::to_string(e) + ".";
        slots_[size_t(i)].push_back({model.layout().offset_of(ex + "w1"), model.layout().offset_of(ex + "w2"),
                                     model.layout().offset_of(ex + "w3")});
      }
    }
  }
  acc_.assign(size_t(n_), 0.f);
}

int64_t StepReducer::bytes_per_round() const {
  return context_.world_size() > 1 ? int64_t(sizeof(float)) * (n_ + extra_) * context_.world_size() : 0;
}

void StepReducer::begin_step() {
  std::fill(acc_.begin(), acc_.end(), 0.f);
  ce_ = 0;
  for (auto& l : load_) std::fill(l.begin(), l.end(), 0);
}

void StepReducer::add_round(const model::LossStats& st) {
  TREX_TRACE(kOther, "dist.reduce_round");
  const auto& last = model_.expert_load();
  for (size_t i = 0; i < load_.size(); ++i)
    for (size_t e = 0; e < load_[i].size(); ++e) load_[i][e] += last[i][e];
  const int R = context_.world_size();
  if (R == 1) {
    add_into(acc_.data(), model_.grads(), n_);
    ce_ += st.ce_sum;
    return;
  }
  const int64_t m = n_ + extra_;
  send_.resize(size_t(m));
  std::memcpy(send_.data(), model_.grads(), sizeof(float) * size_t(n_));
  for (size_t i = 0; i < layer_extra_offset_.size(); ++i) {
    std::span<const float> sg = model_.moe_source_grads(int(i));
    std::memcpy(&send_[size_t(n_ + layer_extra_offset_[i])], sg.data(), sizeof(float) * sg.size());
  }
  recv_.resize(size_t(m) * size_t(R));
  context_.world().allgather(send_.data(), m, recv_.data());
  std::vector<double> ce(static_cast<size_t>(R));
  context_.world().allgather(&st.ce_sum, 1, ce.data());

  // Per element, the ranks' micro-batches in order; the dense part of an expert's element is
  // an exact zero under expert parallelism, its value is added from the owner below.
  core::default_thread_pool().parallel_for(0, n_, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int r = 0; r < R; ++r) {
      const float* src = &recv_[size_t(r) * size_t(m)];
      for (int64_t i = lo; i < hi; ++i) acc_[size_t(i)] += src[i];
    }
  });
  if (extra_ > 0) {
    const ParallelLayout& L = context_.layout();
    const model::ModelConfig& c = model_.config();
    const int64_t f = c.ffn.expert_hidden, d = c.hidden, fs = f / L.etp, fsd = fs * d;
    const int El = c.ffn.routed_experts / L.ep;
    const int group = L.ep * L.etp;  // the expert group: micro-batch r's rank is its peer r % group
    for (int r = 0; r < R; ++r) {
      const int src = r % group;
      for (size_t i = 0; i < slots_.size(); ++i)
        for (int e = 0; e < c.ffn.routed_experts; ++e)
          for (int j = 0; j < L.etp; ++j) {
            // Shard j of expert e: rows [j fs, (j + 1) fs) of w1 and w3, those columns of w2.
            const int owner = L.rank_of(L.edp_of(r), e / El, j);
            const float* g = &recv_[size_t(owner) * size_t(m) + size_t(n_ + layer_extra_offset_[i]) +
                                    size_t((int64_t(src) * El + e % El) * 3 * fsd)];
            const ExpertSlot& s = slots_[i][size_t(e)];
            add_into(&acc_[size_t(s.w1 + j * fsd)], g, fsd);
            add_columns(&acc_[size_t(s.w2 + j * fs)], f, g + fsd, d, fs);
            add_into(&acc_[size_t(s.w3 + j * fsd)], g + 2 * fsd, fsd);
          }
    }
  }
  for (int r = 0; r < R; ++r) ce_ += ce[size_t(r)];
}

void StepReducer::finish_step() {
  if (context_.world_size() == 1) return;
  std::vector<int64_t> flat;
  for (const auto& l : load_) flat.insert(flat.end(), l.begin(), l.end());
  context_.world().allreduce_sum(flat.data(), int64_t(flat.size()));
  size_t k = 0;
  for (auto& l : load_)
    for (int64_t& v : l) v = flat[k++];
}

}  // namespace trex::dist
