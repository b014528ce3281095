// Generator: one sequence decoded through a one-slot BatchDecoder (batch_decoder.cc holds the
// per-token forward), plus the sampling loop.
#include "trex/model/generator.h"

#include <algorithm>

#include "trex/model/batch_decoder.h"
#include "trex/util/error.h"

namespace trex::model {

struct Generator::Impl {
  BatchDecoder decoder;
  explicit Impl(const Transformer& m) : decoder(m, 1) {}
};

Generator::Generator(const Transformer& model) : impl_(std::make_unique<Impl>(model)) {}
Generator::~Generator() = default;

void Generator::load_routing_state(const std::string& path) {
  impl_->decoder.load_routing_state(path);
}

void Generator::reset() { impl_->decoder.reset(0); }

int64_t Generator::position() const { return impl_->decoder.position(0); }

std::span<const float> Generator::step(int32_t id) {
  const int slot[1] = {0};
  return impl_->decoder.step(slot, std::span<const int32_t>(&id, 1));
}

std::span<const float> Generator::prefill(std::span<const int32_t> ids) {
  if (ids.empty()) return {};
  return impl_->decoder.prefill(0, ids);
}

std::vector<int32_t> Generator::generate(std::span<const int32_t> prompt,
                                         const SamplingOptions& o) {
  if (prompt.empty()) throw InputError::field("prompt", "generation needs at least one token");
  reset();
  std::span<const float> logits = prefill(prompt);
  std::mt19937_64 rng(o.seed);
  std::vector<int32_t> out;
  for (int64_t i = 0; i < o.max_tokens; ++i) {
    const double u = double(rng() >> 11) * 0x1.0p-53;
    const size_t limit = o.vocab_limit > 0 ? std::min(logits.size(), size_t(o.vocab_limit))
                                           : logits.size();
    const int32_t id = sample_token(logits.first(limit), o.temperature, o.top_p, u, o.excluded_ids);
    if (std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end()) break;
    out.push_back(id);
    if (i + 1 < o.max_tokens) logits = step(id);
  }
  return out;
}

}  // namespace trex::model
