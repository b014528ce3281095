// Generator: the Transformer's forward for one token at a time (see generator.h), composed from
// the same kernels and layers: mHC pre/post/head, RMSNorm, AttentionLayer::decode, MoeLayer on
// one token, the LM head as one GEMV.
#include "trex/model/generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "trex/core/safetensors.h"
#include "trex/core/trace.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/model/block_tensors.h"
#include "trex/model/matvec.h"
#include "trex/model/moe.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

struct LayerParams {
  AttentionParams attn;
  MoeParams moe;
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float* hc_fn[2] = {};    // attn site, ffn site
  const float* hc_base[2] = {};
  const float* hc_scale[2] = {};
};

}  // namespace

struct Generator::Impl {
  const Transformer& model;
  const ModelConfig& c;
  std::vector<AttentionLayer> attn;
  std::vector<MoeLayer> moe;
  std::vector<AttentionCache> cache;
  std::vector<LayerParams> layer;  // resolved against params_base
  const float* params_base = nullptr;
  int64_t pos = 0;
  // Working rows of one token.
  std::vector<float> X, X2, y, xn, F, logits;
  float pre[kernels::kMhcMaxStreams], post[kernels::kMhcMaxStreams],
      C[kernels::kMhcMaxStreams * kernels::kMhcMaxStreams];

  Impl(const Transformer& m) : model(m), c(m.config()) {
    for (int l = 0; l < c.layers; ++l) {
      attn.emplace_back(c, l);
      moe.emplace_back(c, l < c.ffn.hash_layers);
    }
    cache.resize(static_cast<size_t>(c.layers));
    const int64_t n = c.mhc.streams, d = c.hidden;
    X.resize(static_cast<size_t>(n * d));
    X2.resize(static_cast<size_t>(n * d));
    y.resize(static_cast<size_t>(d));
    xn.resize(static_cast<size_t>(d));
    F.resize(static_cast<size_t>(d));
    logits.resize(static_cast<size_t>(c.vocab));
  }

  const float* tensor(const std::string& name) const {
    return model.params() + model.layout().offset_of(name);
  }

  LayerParams layer_params(int l) const {
    const std::string pre_s = "layers." + std::to_string(l) + ".";
    const ParamLayout& layout = model.layout();
    LayerParams p;
    p.attn = attention_tensors(layout, model.params(), pre_s);
    p.moe = moe_tensors(c, layout, model.params(), pre_s);
    p.attn_norm = tensor(pre_s + "attn_norm");
    p.ffn_norm = tensor(pre_s + "ffn_norm");
    const char* sites[2] = {"hc_attn_", "hc_ffn_"};
    for (int s = 0; s < 2; ++s) {
      p.hc_fn[s] = tensor(pre_s + sites[s] + "fn");
      p.hc_base[s] = tensor(pre_s + sites[s] + "base");
      p.hc_scale[s] = tensor(pre_s + sites[s] + "scale");
    }
    return p;
  }

  kernels::MhcShape mhc_shape() const { return model::mhc_shape(c, 1); }

  // The layers' parameter pointers, resolved again only if the model's array moved.
  void resolve() {
    if (params_base == model.params() && !layer.empty()) return;
    layer.clear();
    for (int l = 0; l < c.layers; ++l) layer.push_back(layer_params(l));
    params_base = model.params();
  }

  // The logits after the last of the tokens in X [n, d] (one token's streams).
  std::span<const float> head(const float* X1) {
    const int64_t d = c.hidden;
    float w[kernels::kMhcMaxStreams];
    kernels::mhc_head_forward(X1, tensor("hc_head_fn"), tensor("hc_head_base"),
                              tensor("hc_head_scale")[0], y.data(), w, mhc_shape());
    kernels::rmsnorm_forward(y.data(), tensor("norm"), xn.data(), 1, d, float(c.norm_eps));
    matvec(tensor("head"), xn.data(), c.vocab, d, logits.data());
    return logits;
  }

  // A whole prompt from position 0 as one batch: the GEMMs of every layer run over all its
  // tokens, AttentionLayer::prefill leaves each cache as token-by-token steps would, and only
  // the last token goes through the head.
  std::span<const float> prefill(std::span<const int32_t> ids) {
    TREX_TRACE(kOther, "generate.prefill");
    const int64_t T = int64_t(ids.size()), n = c.mhc.streams, d = c.hidden;
    for (int32_t id : ids)
      if (id < 0 || id >= c.vocab)
        throw InputError::field("token", "id " + std::to_string(id) + " outside [0, " +
                                             std::to_string(c.vocab) + ")");
    resolve();
    kernels::MhcShape sh = mhc_shape();
    sh.tokens = T;
    const float eps = float(c.norm_eps);
    std::vector<float> XT(static_cast<size_t>(T * n * d)), XT2(XT.size()),
        yT(static_cast<size_t>(T * d)), xnT(yT.size()), FT(yT.size()),
        preT(static_cast<size_t>(T * n)), postT(preT.size()), CT(static_cast<size_t>(T * n * n));
    const float* embed = tensor("embed");
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(XT.data() + (t * n + i) * d, embed + int64_t(ids[size_t(t)]) * d,
                    size_t(d) * sizeof(float));
    for (int l = 0; l < c.layers; ++l) {
      const LayerParams& p = layer[size_t(l)];
      kernels::mhc_pre_forward(XT.data(), p.hc_fn[0], p.hc_base[0], p.hc_scale[0], yT.data(),
                               preT.data(), postT.data(), CT.data(), sh);
      kernels::rmsnorm_forward(yT.data(), p.attn_norm, xnT.data(), T, d, eps);
      attn[size_t(l)].prefill(p.attn, xnT.data(), T, cache[size_t(l)], FT.data());
      kernels::mhc_post_forward(FT.data(), XT.data(), postT.data(), CT.data(), XT2.data(), sh);
      std::swap(XT, XT2);
      kernels::mhc_pre_forward(XT.data(), p.hc_fn[1], p.hc_base[1], p.hc_scale[1], yT.data(),
                               preT.data(), postT.data(), CT.data(), sh);
      kernels::rmsnorm_forward(yT.data(), p.ffn_norm, xnT.data(), T, d, eps);
      moe[size_t(l)].forward(p.moe, xnT.data(), ids.data(), T, FT.data());
      kernels::mhc_post_forward(FT.data(), XT.data(), postT.data(), CT.data(), XT2.data(), sh);
      std::swap(XT, XT2);
    }
    pos = T;
    return head(XT.data() + (T - 1) * n * d);
  }

  std::span<const float> step(int32_t id) {
    TREX_TRACE(kOther, "generate.step");
    if (id < 0 || id >= c.vocab)
      throw InputError::field("token", "id " + std::to_string(id) + " outside [0, " +
                                           std::to_string(c.vocab) + ")");
    const int64_t n = c.mhc.streams, d = c.hidden;
    const float eps = float(c.norm_eps);
    const kernels::MhcShape sh = mhc_shape();
    resolve();
    const float* embed = tensor("embed");
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(X.data() + i * d, embed + int64_t(id) * d, size_t(d) * sizeof(float));
    for (int l = 0; l < c.layers; ++l) {
      const LayerParams& p = layer[size_t(l)];
      // Attention site.
      kernels::mhc_pre_forward(X.data(), p.hc_fn[0], p.hc_base[0], p.hc_scale[0], y.data(), pre,
                               post, C, sh);
      kernels::rmsnorm_forward(y.data(), p.attn_norm, xn.data(), 1, d, eps);
      attn[size_t(l)].decode(p.attn, xn.data(), cache[size_t(l)], F.data());
      kernels::mhc_post_forward(F.data(), X.data(), post, C, X2.data(), sh);
      std::swap(X, X2);
      // FFN site.
      kernels::mhc_pre_forward(X.data(), p.hc_fn[1], p.hc_base[1], p.hc_scale[1], y.data(), pre,
                               post, C, sh);
      kernels::rmsnorm_forward(y.data(), p.ffn_norm, xn.data(), 1, d, eps);
      moe[size_t(l)].forward(p.moe, xn.data(), &id, 1, F.data());
      kernels::mhc_post_forward(F.data(), X.data(), post, C, X2.data(), sh);
      std::swap(X, X2);
    }
    ++pos;
    return head(X.data());
  }
};

Generator::Generator(const Transformer& model) : impl_(std::make_unique<Impl>(model)) {}
Generator::~Generator() = default;

void Generator::load_routing_state(const std::string& path) {
  core::SafetensorsFile file(path);
  const ModelConfig& c = impl_->c;
  for (int l = 0; l < c.layers; ++l) {
    MoeLayer& m = impl_->moe[size_t(l)];
    const std::string base = "layers." + std::to_string(l) + ".ffn.gate.";
    if (const core::StTensorInfo* t = file.find(base + "bias")) {
      if (t->dtype != core::StDtype::kF32 || t->numel() != int64_t(m.bias().size()))
        throw InputError(path, 0, "tensor '" + t->name + "': expected F32 [" +
                                      std::to_string(m.bias().size()) + "]");
      std::memcpy(m.bias().data(), file.bytes(*t).data(), m.bias().size() * sizeof(float));
    }
    if (const core::StTensorInfo* t = file.find(base + "tid2eid")) {
      const int64_t want = int64_t(c.vocab) * c.ffn.top_k;
      if (t->dtype != core::StDtype::kI32 || t->numel() != want)
        throw InputError(path, 0, "tensor '" + t->name + "': expected I32 [" +
                                      std::to_string(c.vocab) + ", " +
                                      std::to_string(c.ffn.top_k) + "]");
      m.tid2eid().resize(static_cast<size_t>(want));
      std::memcpy(m.tid2eid().data(), file.bytes(*t).data(), size_t(want) * sizeof(int32_t));
    }
  }
}

void Generator::reset() {
  for (AttentionCache& c : impl_->cache) c.clear();
  impl_->pos = 0;
}

int64_t Generator::position() const { return impl_->pos; }

std::span<const float> Generator::step(int32_t id) { return impl_->step(id); }

std::span<const float> Generator::prefill(std::span<const int32_t> ids) {
  if (impl_->pos == 0 && ids.size() > 1) return impl_->prefill(ids);
  std::span<const float> out;
  for (int32_t id : ids) out = impl_->step(id);
  return out;
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
    const int32_t id = sample_token(logits.first(limit), o.temperature, o.top_p, u);
    if (std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end()) break;
    out.push_back(id);
    if (i + 1 < o.max_tokens) logits = impl_->step(id);
  }
  return out;
}

}  // namespace trex::model
