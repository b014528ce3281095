// The V4 transformer: embedding, blocks of (mHC pre, RMSNorm, attention | MoE, mHC post), the
// mHC head, final norm, LM head and fused cross-entropy; the MTP block on top when enabled.
//
// Forward and backward are one pass each over the blocks. The backward of the heads runs right
// after their loss (they depend on nothing later), so one [T, V] logits buffer serves the main
// head and the MTP head in turn. Activation buffers are sized for the largest batch seen and
// reused across steps. Every kernel that overwrites a parameter gradient (RMSNorm dw, the mHC
// dphi/db/dscale) writes into scratch that is then added into grads(), so gradients accumulate.
#include "trex/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "trex/core/aligned_vector.h"
#include "trex/core/bf16.h"
#include "trex/core/safetensors.h"
#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/model/block_tensors.h"
#include "trex/model/moe.h"
#include "trex/model/side_by_side.h"
#include "trex/util/error.h"

namespace trex::model {

using kernels::sgemm;
using kernels::Trans;

namespace {

template <class V>
void fit(V& v, size_t n) {
  if (v.size() < n) {
    v.reserve(n);  // capacity n, not libstdc++'s doubling: the huge page at n's end faults in whole
    v.resize(n);
  }
}

void add_into(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Deterministic N(0, 1) draws: splitmix64 words through Box-Muller (no library distribution,
// whose algorithm the standard leaves open), seeded per tensor by (seed, name) so that adding or
// removing a tensor (MTP) leaves every other tensor's values unchanged.
class NormalStream {
 public:
  NormalStream(uint64_t seed, const std::string& name) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the name
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    state_ = seed * 0x9E3779B97F4A7C15ull ^ h;
  }
  float next() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u1 = (double(word() >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
    double u2 = double(word() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1)), th = 2.0 * M_PI * u2;
    spare_ = float(r * std::sin(th));
    have_spare_ = true;
    return float(r * std::cos(th));
  }

 private:
  uint64_t word() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  float spare_ = 0;
  bool have_spare_ = false;
};

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Spec section 11: norms and mHC scale 1; sinks, ape, mHC base 0; everything else N(0, std).
void init_tensor(const ParamInfo& p, float* w, uint64_t seed, float std) {
  const std::string& n = p.name;
  bool one = ends_with(n, "norm") || ends_with(n, "_scale");
  bool zero = ends_with(n, "attn_sink") || ends_with(n, ".ape") || ends_with(n, "_base");
  if (one || zero) {
    std::fill(w, w + p.numel, one ? 1.f : 0.f);
    return;
  }
  NormalStream rng(seed, n);
  for (int64_t i = 0; i < p.numel; ++i) w[i] = std * rng.next();
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The activations of one mHC site (attention or FFN) of one block.
struct SiteActs {
  core::aligned_vector<float> y, xn, F;   // [T, d]: mixed input, normed input, layer output
  core::aligned_vector<float> pre, post;  // [T, n]
  core::aligned_vector<float> C;          // [T, n, n]
  void fit_for(int64_t T, int64_t d, int64_t n) {
    fit(y, size_t(T * d));
    fit(xn, size_t(T * d));
    fit(F, size_t(T * d));
    fit(pre, size_t(T * n));
    fit(post, size_t(T * n));
    fit(C, size_t(T * n * n));
  }
};

}  // namespace

struct Transformer::Impl {
  // The gradient-final hook and the flat ranges it reports (set_grad_final_hook).
  GradFinalHook grad_final;
  int64_t head_begin = 0, head_end = 0;  // norm, head, hc_head_*
  std::vector<int64_t> layer_begin;      // [L + 1]: layer l is [layer_begin[l], layer_begin[l + 1])
  // [L]: where layer l's FFN (gate, experts, shared experts) and then its norms and mHC
  // parameters begin; the attention is [layer_begin[l], layer_ffn[l]).
  std::vector<int64_t> layer_ffn, layer_tail;
  void grads_final(int64_t lo, int64_t hi) {
    if (grad_final && hi > lo) grad_final(lo, hi);
  }
  ModelConfig config;
  ParamLayout layout;
  bool mtp = false;
  // 64-byte aligned (and on huge pages where granted): the optimizer streams the new weights
  // into params in its own pass only on 64-byte boundaries, and its vector loads of grads split
  // no cache lines (a std::vector of 320 MB starts 16 bytes into a page).
  core::aligned_vector<float> params, grads;
  Precision precision = Precision::kFp32;
  std::vector<float> rounded;  // kBf16: params with the matrices rounded to bf16
  std::vector<bool> bf16_tensor;  // per layout entry: read rounded to bf16 in kBf16
  const float* W = nullptr;    // the weights forward and backward read: params or rounded

  struct Block {
    std::string prefix;  // "layers.3." or "mtp.0."
    AttentionLayer attn;
    MoeLayer moe;
    SiteActs a, f;             // attention site, FFN site
    core::aligned_vector<float> X_mid;  // [T, n, d]: streams between the two sites
    Block(const ModelConfig& c, std::string p, int layer, int ratio_override, bool hash)
        : prefix(std::move(p)), attn(c, layer, ratio_override), moe(c, hash) {}
  };
  std::vector<Block> blocks;  // main layers, then the MTP block
  MoeScratch moe_scratch;     // shared by the blocks' MoE layers, which run one at a time

  // Activations.
  int64_t T = 0;
  std::vector<core::aligned_vector<float>> streams;  // [L + 1][T, n, d]: block inputs, then the final X
  core::aligned_vector<float> head_y, head_yn;       // [T, d]
  core::aligned_vector<float> head_w;                // [T, n]
  // [T, n + 1]: a head forward's projections and squares, read by its backward in the same
  // head() call (the main head and the MTP head take turns with it).
  core::aligned_vector<float> head_proj;
  core::aligned_vector<float> logits;                // [T, V]
  core::aligned_vector<float> row_loss;              // [T]
  // MTP activations.
  std::vector<int32_t> mtp_ids, mtp_targets;  // [T]
  core::aligned_vector<float> mtp_e, mtp_en;           // [T, d]
  core::aligned_vector<float> mtp_hn;                  // [T, n, d]
  core::aligned_vector<float> mtp_X0, mtp_Xout;        // [T, n, d]
  core::aligned_vector<float> mtp_y, mtp_yn, mtp_w;    // head
  // Backward scratch.
  core::aligned_vector<float> gA, gB;                  // [T, n, d] stream gradients
  core::aligned_vector<float> dF, dxn, dy, dtmp;       // [T, d]
  core::aligned_vector<float> dstreams_tmp;            // [T, n, d]
  core::aligned_vector<float> dpost, dC;               // [T, n], [T, n, n]
  core::aligned_vector<float> dphi, db, dscale, dnorm; // parameter scratch
  core::aligned_vector<float> mhc_ws;
  std::vector<std::vector<int64_t>> load;
  // Tokens per expert summed over the forward_backward calls since zero_grads(): the step's
  // load, which update_routing_bias() balances (several micro-batches make one step).
  std::vector<std::vector<int64_t>> step_load;

  const float* P(const std::string& name) const { return W + layout.offset_of(name); }
  float* Gd(const std::string& name) { return grads.data() + layout.offset_of(name); }

  // kBf16: values rounded to bf16 in place (an op boundary of the bf16 model).
  void boundary(float* x, int64_t n) {
    if (precision != Precision::kBf16) return;
    core::default_thread_pool().parallel_for(0, n, 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) x[i] = core::to_float(core::to_bf16(x[i]));
    });
  }
  // One pass over the parameters: each matrix rounded, everything else copied.
  void refresh_weights() {
    if (precision != Precision::kBf16) {
      W = params.data();
      return;
    }
    rounded.resize(params.size());
    for (const ParamInfo& p : layout.params) {
      const float* src = params.data() + p.offset;
      float* dst = rounded.data() + p.offset;
      bool round = bf16_tensor[size_t(&p - layout.params.data())];
      core::default_thread_pool().parallel_for(0, p.numel, 1 << 16, [&](int64_t lo, int64_t hi) {
        if (round)
          for (int64_t i = lo; i < hi; ++i) dst[i] = core::to_float(core::to_bf16(src[i]));
        else
          std::memcpy(dst + lo, src + lo, sizeof(float) * size_t(hi - lo));
      });
    }
    W = rounded.data();
  }

  kernels::MhcShape mhc_shape(int64_t tokens) const { return model::mhc_shape(config, tokens); }
  float eps() const { return float(config.norm_eps); }

  template <class PT>
  AttentionTensors<PT> attn_tensors(PT base, const std::string& prefix) const {
    return attention_tensors(layout, base, prefix);
  }
  template <class PT>
  MoeTensors<PT> moe_tensors(PT base, const std::string& prefix) const {
    return model::moe_tensors(config, layout, base, prefix);
  }

  void fit_buffers(int64_t tokens) {
    T = tokens;
    const int64_t d = config.hidden, n = config.mhc.streams, V = config.vocab;
    streams.resize(size_t(config.layers + 1));
    for (auto& s : streams) fit(s, size_t(T * n * d));
    for (Block& b : blocks) {
      b.a.fit_for(T, d, n);
      b.f.fit_for(T, d, n);
      fit(b.X_mid, size_t(T * n * d));
    }
    fit(head_y, size_t(T * d));
    fit(head_yn, size_t(T * d));
    fit(head_w, size_t(T * n));
    fit(head_proj, size_t(kernels::mhc_head_proj_floats(mhc_shape(T))));
    fit(logits, size_t(T * V));
    fit(row_loss, size_t(T));
    fit(gA, size_t(T * n * d));
    fit(gB, size_t(T * n * d));
    fit(dstreams_tmp, size_t(T * n * d));
    fit(dF, size_t(T * d));
    fit(dpost, size_t(T * n));
    fit(dC, size_t(T * n * n));
    fit(dxn, size_t(T * d));
    fit(dy, size_t(T * d));
    fit(dtmp, size_t(T * d));
    const int64_t R = (n + 2) * n;
    fit(dphi, size_t(R * n * d));
    fit(db, size_t(R));
    fit(dscale, size_t(3));
    fit(dnorm, size_t(d));
    fit(mhc_ws, size_t(std::max(kernels::mhc_pre_backward_workspace(mhc_shape(T)),
                                kernels::mhc_head_backward_workspace(mhc_shape(T)))));
    if (mtp) {
      fit(mtp_ids, size_t(T));
      fit(mtp_targets, size_t(T));
      fit(mtp_e, size_t(T * d));
      fit(mtp_en, size_t(T * d));
      fit(mtp_hn, size_t(T * n * d));
      fit(mtp_X0, size_t(T * n * d));
      fit(mtp_Xout, size_t(T * n * d));
      fit(mtp_y, size_t(T * d));
      fit(mtp_yn, size_t(T * d));
      fit(mtp_w, size_t(T * n));
    }
  }

  // One mHC site forward: Xin -> Xout through `layer` (attention or MoE) applied to RMSNorm(y).
  template <class Layer>
  void site_forward(const std::string& prefix, const char* site, const char* norm, SiteActs& s,
                    const float* Xin, float* Xout, Layer&& layer) {
    const int64_t d = config.hidden;
    kernels::MhcShape sh = mhc_shape(T);
    std::string hc = prefix + site;
    {
      TREX_TRACE(kElementwise, "mhc_pre");
      kernels::mhc_pre_forward(Xin, P(hc + "fn"), P(hc + "base"), P(hc + "scale"), s.y.data(), s.pre.data(),
                               s.post.data(), s.C.data(), sh);
      boundary(s.y.data(), T * d);
    }
    {
      TREX_TRACE(kElementwise, "rmsnorm");
      kernels::rmsnorm_forward(s.y.data(), P(prefix + norm), s.xn.data(), T, d, eps());
      boundary(s.xn.data(), T * d);
    }
    layer(s.xn.data(), s.F.data());
    boundary(s.F.data(), T * d);
    TREX_TRACE(kElementwise, "mhc_post");
    kernels::mhc_post_forward(s.F.data(), Xin, s.post.data(), s.C.data(), Xout, sh);
    boundary(Xout, T * config.mhc.streams * d);
  }

  // The site's backward: G = dL/dXout -> dXin (overwritten), parameter gradients added.
  template <class LayerBackward>
  void site_backward(const std::string& prefix, const char* site, const char* norm, SiteActs& s,
                     const float* Xin, const float* G, float* dXin, LayerBackward&& layer_backward) {
    const int64_t d = config.hidden, n = config.mhc.streams, R = (n + 2) * n;
    kernels::MhcShape sh = mhc_shape(T);
    std::string hc = prefix + site;
    {
      TREX_TRACE(kElementwise, "mhc_post.bwd");
      kernels::mhc_post_backward(G, s.F.data(), Xin, s.post.data(), s.C.data(), dF.data(), dXin, dpost.data(),
                                 dC.data(), sh);
    }
    layer_backward(dF.data(), dxn.data());
    {
      TREX_TRACE(kElementwise, "rmsnorm.bwd");
      kernels::rmsnorm_backward(s.y.data(), P(prefix + norm), dxn.data(), dy.data(), dnorm.data(), T, d, eps());
      add_into(Gd(prefix + norm), dnorm.data(), d);
    }
    TREX_TRACE(kElementwise, "mhc_pre.bwd");
    kernels::mhc_pre_backward(Xin, P(hc + "fn"), P(hc + "base"), P(hc + "scale"), dy.data(), dpost.data(),
                              dC.data(), dXin, dphi.data(), db.data(), dscale.data(), sh, mhc_ws.data());
    add_into(Gd(hc + "fn"), dphi.data(), R * n * d);
    add_into(Gd(hc + "base"), db.data(), R);
    add_into(Gd(hc + "scale"), dscale.data(), 3);
  }

  double block_forward(Block& b, const float* Xin, float* Xout, const int32_t* ids,
                       std::span<const DocSpan> docs) {
    double idx_loss = 0;
    AttentionParams ap = attn_tensors<const float*>(W, b.prefix);
    site_forward(b.prefix, "hc_attn_", "attn_norm", b.a, Xin, b.X_mid.data(), [&](const float* x, float* out) {
      TREX_TRACE(kAttention, "attention");
      idx_loss = b.attn.forward(ap, x, docs, T, out);
    });
    MoeParams mp = moe_tensors<const float*>(W, b.prefix);
    site_forward(b.prefix, "hc_ffn_", "ffn_norm", b.f, b.X_mid.data(), Xout,
                 [&](const float* x, float* out) { b.moe.forward(mp, x, ids, T, out, &moe_scratch); });
    return idx_loss;
  }

  // G [T, n, d] = dL/dXout (in gA) -> dL/dXin (in gA again; gB is scratch). For a main layer
  // (layer >= 0) its FFN's range is reported final between the two sites: nothing after the FFN
  // site's backward adds to it, and a swap update can start on it during the attention's.
  void block_backward(Block& b, const float* Xin, int64_t layer = -1) {
    AttentionParams ap = attn_tensors<const float*>(W, b.prefix);
    AttentionGrads ag = attn_tensors<float*>(grads.data(), b.prefix);
    MoeParams mp = moe_tensors<const float*>(W, b.prefix);
    MoeGrads mg = moe_tensors<float*>(grads.data(), b.prefix);
    site_backward(b.prefix, "hc_ffn_", "ffn_norm", b.f, b.X_mid.data(), gA.data(), gB.data(),
                  [&](const float* dout, float* dx) { b.moe.backward(mp, dout, dx, mg, &moe_scratch); });
    if (layer >= 0) grads_final(layer_ffn[size_t(layer)], layer_tail[size_t(layer)]);
    site_backward(b.prefix, "hc_attn_", "attn_norm", b.a, Xin, gB.data(), gA.data(),
                  [&](const float* dout, float* dx) {
                    TREX_TRACE(kAttention, "attention.bwd");
                    b.attn.backward(ap, dout, dx, ag);
                  });
  }

  // hc_head, final norm, LM head and cross-entropy over X [T, n, d]. With `backward`, the
  // logits gradient (scale per counted row) flows back into dX (overwritten).
  double head(const std::string& prefix, const float* X, core::aligned_vector<float>& y,
              core::aligned_vector<float>& yn, core::aligned_vector<float>& w, const int32_t* targets, int64_t* counted, float scale, float* dX,
              std::vector<float>* logits_out) {
    const int64_t d = config.hidden, V = config.vocab, n = config.mhc.streams;
    kernels::MhcShape sh = mhc_shape(T);
    {
      TREX_TRACE(kElementwise, "mhc_head");
      kernels::mhc_head_forward(X, P(prefix + "hc_head_fn"), P(prefix + "hc_head_base"),
                                P(prefix + "hc_head_scale")[0], y.data(), w.data(), sh, nullptr,
                                head_proj.data());
      kernels::rmsnorm_forward(y.data(), P(prefix + "norm"), yn.data(), T, d, eps());
      boundary(yn.data(), T * d);
    }
    {
      TREX_TRACE(kGemm, "lm_head");
      sgemm(Trans::kNo, Trans::kYes, T, V, d, 1.f, yn.data(), d, P("head"), d, 0.f, logits.data(), V);
    }
    if (logits_out) logits_out->assign(logits.begin(), logits.begin() + T * V);
    double sum = 0;
    int64_t c = 0;
    if (targets) {
      TREX_TRACE(kElementwise, "cross_entropy");
      kernels::cross_entropy_forward_backward(logits.data(), targets, row_loss.data(), dX ? logits.data() : nullptr,
                                              T, V, scale);
      for (int64_t t = 0; t < T; ++t)
        if (targets[t] >= 0) sum += double(row_loss[size_t(t)]), ++c;
    }
    *counted = c;
    if (!dX) return sum;
    {
      TREX_TRACE(kGemm, "lm_head.bwd");
      // Two independent products of equal size (side_by_side.h).
      float* gh = Gd("head");
      side_by_side({[&] { sgemm(Trans::kNo, Trans::kNo, T, d, V, 1.f, logits.data(), V, P("head"), d, 0.f, dxn.data(), d); },
                    [&] { sgemm(Trans::kYes, Trans::kNo, V, d, T, 1.f, logits.data(), V, yn.data(), d, 1.f, gh, d); }});
    }
    TREX_TRACE(kElementwise, "mhc_head.bwd");
    kernels::rmsnorm_backward(y.data(), P(prefix + "norm"), dxn.data(), dy.data(), dnorm.data(), T, d, eps());
    add_into(Gd(prefix + "norm"), dnorm.data(), d);
    kernels::mhc_head_backward(X, P(prefix + "hc_head_fn"), P(prefix + "hc_head_base"), P(prefix + "hc_head_scale")[0],
                               dy.data(), dX, dphi.data(), db.data(), dscale.data(), sh, mhc_ws.data(),
                               nullptr, head_proj.data(), kernels::MhcGradInto::kOverwrite);
    add_into(Gd(prefix + "hc_head_fn"), dphi.data(), n * n * d);
    add_into(Gd(prefix + "hc_head_base"), db.data(), n);
    add_into(Gd(prefix + "hc_head_scale"), dscale.data(), 1);
    return sum;
  }

  void check_batch(const Batch& batch, bool need_targets) const {
    const int64_t T = batch.tokens;
    if (T < 1) throw InputError::field("batch.tokens", "must be >= 1, got " + std::to_string(T));
    if (int64_t(batch.ids.size()) != T)
      throw InputError::field("batch.ids", "has " + std::to_string(batch.ids.size()) + " entries for " +
                                               std::to_string(T) + " tokens");
    if (need_targets ? int64_t(batch.targets.size()) != T : !(batch.targets.empty() || int64_t(batch.targets.size()) == T))
      throw InputError::field("batch.targets", "has " + std::to_string(batch.targets.size()) + " entries for " +
                                                   std::to_string(T) + " tokens");
    for (int64_t t = 0; t < T; ++t) {
      int32_t id = batch.ids[size_t(t)];
      if (id < 0 || id >= config.vocab)
        throw InputError::field("batch.ids[" + std::to_string(t) + "]",
                                std::to_string(id) + " outside [0, " + std::to_string(config.vocab) + ")");
    }
    for (size_t t = 0; t < batch.targets.size(); ++t) {
      int32_t id = batch.targets[t];
      if (id < -1 || id >= config.vocab)
        throw InputError::field("batch.targets[" + std::to_string(t) + "]",
                                std::to_string(id) + " outside [-1, " + std::to_string(config.vocab) + ")");
    }
    int64_t pos = 0;
    for (size_t i = 0; i < batch.docs.size(); ++i) {
      const DocSpan& s = batch.docs[i];
      if (s.begin != pos || s.len < 1)
        throw InputError::field("batch.docs[" + std::to_string(i) + "]",
                                "span [" + std::to_string(s.begin) + ", +" + std::to_string(s.len) +
                                    ") does not continue the cover of [0, T) at " + std::to_string(pos));
      pos += s.len;
    }
    if (!batch.docs.empty() && pos != T)
      throw InputError::field("batch.docs", "cover [0, " + std::to_string(pos) + ") of " + std::to_string(T) + " tokens");
  }

  LossStats run(const Batch& batch, bool backward, float grad_scale, std::vector<float>* logits_out);
};

LossStats Transformer::Impl::run(const Batch& batch, bool backward, float grad_scale,
                                 std::vector<float>* logits_out) {
  check_batch(batch, backward);
  fit_buffers(batch.tokens);
  refresh_weights();
  const int64_t d = config.hidden, n = config.mhc.streams, L = config.layers;
  std::vector<DocSpan> one_doc{DocSpan{0, T}};
  std::span<const DocSpan> docs = batch.docs.empty() ? std::span<const DocSpan>(one_doc)
                                                      : std::span<const DocSpan>(batch.docs);
  const int32_t* ids = batch.ids.data();
  const int32_t* targets = batch.targets.empty() ? nullptr : batch.targets.data();
  LossStats st;

  {
    TREX_TRACE(kElementwise, "embed");
    const float* E = P("embed");
    float* X = streams[0].data();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(X + (t * n + i) * d, E + int64_t(ids[t]) * d, sizeof(float) * size_t(d));
  }
  for (int64_t l = 0; l < L; ++l)
    st.indexer_loss += block_forward(blocks[size_t(l)], streams[size_t(l)].data(), streams[size_t(l + 1)].data(), ids, docs);
  const float* Xf = streams[size_t(L)].data();

  // Main head (and its backward, into gA).
  int64_t counted = 0;
  if (targets)
    for (int64_t t = 0; t < T; ++t) counted += targets[t] >= 0;
  float scale = grad_scale > 0 ? grad_scale : (counted ? 1.f / float(counted) : 0.f);
  st.ce_sum = head("", Xf, head_y, head_yn, head_w, targets, &st.counted, scale, backward ? gA.data() : nullptr,
                   logits_out);
  if (backward && !mtp) grads_final(head_begin, head_end);  // with MTP, "head" is shared: below

  if (mtp) {
    // Position t predicts token t + 2 from the main stream at t and the embedding of id t + 1,
    // inside one document; the last position of a document has nothing to predict.
    Block& mb = blocks.back();
    for (const DocSpan& s : docs)
      for (int64_t t = s.begin; t < s.begin + s.len; ++t) {
        bool inside = t + 1 < s.begin + s.len;
        mtp_ids[size_t(t)] = inside ? ids[t + 1] : 0;
        mtp_targets[size_t(t)] = inside && targets ? targets[t + 1] : -1;
      }
    {
      TREX_TRACE(kGemm, "mtp.proj");
      const float* E = P("embed");
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(&mtp_e[size_t(t * d)], E + int64_t(mtp_ids[size_t(t)]) * d, sizeof(float) * size_t(d));
      kernels::rmsnorm_forward(mtp_e.data(), P("mtp.0.enorm"), mtp_en.data(), T, d, eps());
      kernels::rmsnorm_forward(Xf, P("mtp.0.hnorm"), mtp_hn.data(), T * n, d, eps());
      boundary(mtp_en.data(), T * d);
      boundary(mtp_hn.data(), T * n * d);
      // X0[t, i] = h_proj hn[t, i] + e_proj en[t]
      sgemm(Trans::kNo, Trans::kYes, T * n, d, d, 1.f, mtp_hn.data(), d, P("mtp.0.h_proj"), d, 0.f, mtp_X0.data(), d);
      sgemm(Trans::kNo, Trans::kYes, T, d, d, 1.f, mtp_en.data(), d, P("mtp.0.e_proj"), d, 0.f, dtmp.data(), d);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < n; ++i) add_into(&mtp_X0[size_t((t * n + i) * d)], &dtmp[size_t(t * d)], d);
      boundary(mtp_X0.data(), T * n * d);
    }
    st.indexer_loss += block_forward(mb, mtp_X0.data(), mtp_Xout.data(), mtp_ids.data(), docs);
    int64_t mc = 0;
    float mscale = scale * float(config.mtp_loss_weight);
    st.mtp_sum = head("mtp.0.", mtp_Xout.data(), mtp_y, mtp_yn, mtp_w, targets ? mtp_targets.data() : nullptr, &mc,
                      mscale, backward ? gB.data() : nullptr, nullptr);
    st.mtp_counted = mc;
    if (backward) {
      // gB = dL/dXout of the MTP block; block_backward works on gA, so park the main head's
      // gradient of Xf in dstreams_tmp meanwhile.
      std::swap(gA, dstreams_tmp);
      std::swap(gA, gB);
      block_backward(mb, mtp_X0.data());  // gA = dL/dX0
      TREX_TRACE(kGemm, "mtp.proj.bwd");
      // dP_e[t] = sum_i dX0[t, i] (into dtmp); dP_h = dX0.
      std::fill(dtmp.begin(), dtmp.begin() + T * d, 0.f);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < n; ++i) add_into(&dtmp[size_t(t * d)], &gA[size_t((t * n + i) * d)], d);
      // The projections' weight gradients and dhn = dP_h h_proj (into gB) are independent
      // products (side_by_side.h), the larger first; dhn then goes through hnorm into dXf
      // (added to the main head's part).
      float* gh = Gd("mtp.0.h_proj");
      float* ge = Gd("mtp.0.e_proj");
      const float* wh = P("mtp.0.h_proj");
      side_by_side({[&] { sgemm(Trans::kYes, Trans::kNo, d, d, T * n, 1.f, gA.data(), d, mtp_hn.data(), d, 1.f, gh, d); },
                    [&] { sgemm(Trans::kNo, Trans::kNo, T * n, d, d, 1.f, gA.data(), d, wh, d, 0.f, gB.data(), d); },
                    [&] { sgemm(Trans::kYes, Trans::kNo, d, d, T, 1.f, dtmp.data(), d, mtp_en.data(), d, 1.f, ge, d); }});
      kernels::rmsnorm_backward(Xf, P("mtp.0.hnorm"), gB.data(), gA.data(), dnorm.data(), T * n, d, eps());
      add_into(Gd("mtp.0.hnorm"), dnorm.data(), d);
      add_into(dstreams_tmp.data(), gA.data(), T * n * d);
      // den = dP_e e_proj, then through enorm into the embedding rows of the ids t + 1.
      sgemm(Trans::kNo, Trans::kNo, T, d, d, 1.f, dtmp.data(), d, P("mtp.0.e_proj"), d, 0.f, dxn.data(), d);
      kernels::rmsnorm_backward(mtp_e.data(), P("mtp.0.enorm"), dxn.data(), dy.data(), dnorm.data(), T, d, eps());
      add_into(Gd("mtp.0.enorm"), dnorm.data(), d);
      float* gE = Gd("embed");
      for (int64_t t = 0; t < T; ++t) add_into(gE + int64_t(mtp_ids[size_t(t)]) * d, &dy[size_t(t * d)], d);
      std::swap(gA, dstreams_tmp);  // gA = dL/dXf (main head + MTP)
      // The main head and the MTP block: the MTP head shares "head" (its embedding rows go to
      // "embed", final last).
      grads_final(head_begin, layout.total);
    }
  }
  if (!backward) return st;

  for (int64_t l = L - 1; l >= 0; --l) {
    block_backward(blocks[size_t(l)], streams[size_t(l)].data(), l);  // reports the FFN
    grads_final(layer_tail[size_t(l)], layer_begin[size_t(l + 1)]);     // norms and mHC, both sites
    grads_final(layer_begin[size_t(l)], layer_ffn[size_t(l)]);          // attention
  }
  {
    TREX_TRACE(kElementwise, "embed.bwd");
    float* gE = Gd("embed");
    for (int64_t t = 0; t < T; ++t) {
      float* row = gE + int64_t(ids[t]) * d;
      for (int64_t i = 0; i < n; ++i) add_into(row, &gA[size_t((t * n + i) * d)], d);
    }
  }
  grads_final(0, layer_begin[0]);  // the embedding
  return st;
}

Transformer::Transformer(const ModelConfig& config, uint64_t seed, bool with_mtp) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.config = config;
  m.layout = build_param_layout(config, with_mtp);
  m.mtp = with_mtp && config.mtp_depth > 0;
  for (const ParamInfo& p : m.layout.params) {
    bool fp32 = p.name.find("hc_") != std::string::npos || p.name.find("gate.weight") != std::string::npos ||
                p.name.find(".ape") != std::string::npos;
    m.bf16_tensor.push_back(p.shape.size() == 2 && !fp32);
  }
  m.params.assign(size_t(m.layout.total), 0.f);
  m.grads.assign(size_t(m.layout.total), 0.f);
  m.W = m.params.data();
  for (const ParamInfo& p : m.layout.params) init_tensor(p, m.params.data() + p.offset, seed, float(config.init_std));
  for (int i = 0; i < config.layers; ++i)
    m.blocks.emplace_back(config, "layers." + std::to_string(i) + ".", i, -1, i < config.ffn.hash_layers);
  if (m.mtp) m.blocks.emplace_back(config, "mtp.0.", 0, 0, false);
  m.load.assign(m.blocks.size(), std::vector<int64_t>(size_t(config.ffn.routed_experts), 0));
  m.step_load = m.load;
  // The flat layout is embed, layers.0 ... layers.L-1, the main head, then the MTP block.
  for (int i = 0; i < config.layers; ++i) {
    const std::string prefix = "layers." + std::to_string(i) + ".";
    for (const ParamInfo& p : m.layout.params)  // in flat order: the first is where it begins
      if (p.name.compare(0, prefix.size(), prefix) == 0) {
        m.layer_begin.push_back(p.offset);
        break;
      }
    m.layer_ffn.push_back(m.layout.offset_of(prefix + "ffn.gate.weight"));
    m.layer_tail.push_back(m.layout.offset_of(prefix + "attn_norm"));
  }
  m.head_begin = m.layout.offset_of("norm");
  m.layer_begin.push_back(m.head_begin);
  const ParamInfo* mtp0 = m.layout.find("mtp.0.e_proj");
  m.head_end = mtp0 ? mtp0->offset : m.layout.total;
}

void Transformer::set_grad_final_hook(GradFinalHook hook) { impl_->grad_final = std::move(hook); }

Transformer::~Transformer() = default;

const ModelConfig& Transformer::config() const { return impl_->config; }
void Transformer::set_precision(Precision p) {
  impl_->precision = p;
  if (p == Precision::kFp32) impl_->rounded = {};
}
Precision Transformer::precision() const { return impl_->precision; }
const ParamLayout& Transformer::layout() const { return impl_->layout; }
bool Transformer::mtp_enabled() const { return impl_->mtp; }
float* Transformer::params() { return impl_->params.data(); }
const float* Transformer::params() const { return impl_->params.data(); }
float* Transformer::grads() { return impl_->grads.data(); }
void Transformer::zero_grads() {
  // Over the pool in 4 MiB chunks: one thread's stores do not reach the memory's write rate
  // (v4-micro: 320 MB, 13-16 ms of one thread before each step's embedding, near idle).
  float* g = impl_->grads.data();
  core::default_thread_pool().parallel_for(
      0, int64_t(impl_->grads.size()), int64_t(1) << 20,
      [&](int64_t lo, int64_t hi) { std::memset(g + lo, 0, sizeof(float) * size_t(hi - lo)); });
  for (auto& l : impl_->step_load) std::fill(l.begin(), l.end(), 0);
  for (Impl::Block& b : impl_->blocks) b.moe.zero_source_grads();
}

void Transformer::set_expert_exchange(ExpertExchange* ex) {
  for (Impl::Block& b : impl_->blocks) b.moe.set_exchange(ex);
}
int Transformer::moe_layers() const { return int(impl_->blocks.size()); }
const std::string& Transformer::moe_prefix(int i) const { return impl_->blocks.at(size_t(i)).prefix; }
int Transformer::first_local_expert(int i) const { return impl_->blocks.at(size_t(i)).moe.first_local_expert(); }
int Transformer::local_experts(int i) const { return impl_->blocks.at(size_t(i)).moe.local_experts(); }
std::span<const float> Transformer::moe_source_grads(int i) const {
  return impl_->blocks.at(size_t(i)).moe.source_grads();
}

LossStats Transformer::forward_backward(const Batch& batch, float grad_scale) {
  LossStats st = impl_->run(batch, true, grad_scale, nullptr);
  for (size_t b = 0; b < impl_->blocks.size(); ++b) {
    impl_->load[b] = impl_->blocks[b].moe.load();
    for (size_t e = 0; e < impl_->load[b].size(); ++e) impl_->step_load[b][e] += impl_->load[b][e];
  }
  return st;
}

LossStats Transformer::forward(const Batch& batch, std::vector<float>* logits) {
  LossStats st = impl_->run(batch, false, 0, logits);
  for (size_t b = 0; b < impl_->blocks.size(); ++b) impl_->load[b] = impl_->blocks[b].moe.load();
  return st;
}

const std::vector<std::vector<int64_t>>& Transformer::expert_load() const { return impl_->load; }

const std::vector<std::vector<int64_t>>& Transformer::step_expert_load() const {
  return impl_->step_load;
}

void Transformer::update_routing_bias() { update_routing_bias(impl_->step_load); }

void Transformer::update_routing_bias(const std::vector<std::vector<int64_t>>& load) {
  if (load.size() != impl_->blocks.size()) throw std::invalid_argument("update_routing_bias: one load per MoE layer");
  for (size_t b = 0; b < impl_->blocks.size(); ++b)
    impl_->blocks[b].moe.update_bias(float(impl_->config.ffn.bias_update_rate), load[b]);
}

float* Transformer::routing_bias(int i) {
  Impl::Block& b = impl_->blocks.at(size_t(i));
  return b.moe.hash() ? nullptr : b.moe.bias().data();
}

namespace {

std::string bias_name(const std::string& prefix) { return prefix + "ffn.gate.bias"; }
std::string table_name(const std::string& prefix) { return prefix + "ffn.gate.tid2eid"; }

}  // namespace

void Transformer::save(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  const Impl& m = *impl_;
  std::vector<core::StTensorSource> ts;
  for (const ParamInfo& p : m.layout.params)
    ts.push_back({p.name, core::StDtype::kF32, p.shape, m.params.data() + p.offset, {}});
  for (const Impl::Block& b : m.blocks) {
    if (b.moe.hash())
      ts.push_back({table_name(b.prefix), core::StDtype::kI32,
                    {int64_t(m.config.vocab), int64_t(b.moe.top_k())}, b.moe.tid2eid().data(), {}});
    else
      ts.push_back({bias_name(b.prefix), core::StDtype::kF32, {int64_t(b.moe.experts())}, b.moe.bias().data(), {}});
  }
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "trex-v4");
  meta.emplace("config", m.config.name);
  core::write_safetensors(path, ts, meta);
}

void Transformer::load(const std::string& path) {
  Impl& m = *impl_;
  core::SafetensorsFile file(path);
  auto fail = [&](const std::string& tensor, const std::string& why) {
    throw InputError(path, 0, "tensor '" + tensor + "': " + why);
  };
  auto read = [&](const std::string& name, core::StDtype dtype, const std::vector<int64_t>& shape, void* dst) {
    const core::StTensorInfo* t = file.find(name);
    if (!t) throw InputError(path, 0, "no tensor '" + name + "' (the model " + m.config.name + " has it)");
    if (t->dtype != dtype) fail(name, std::string("dtype ") + core::to_string(t->dtype) + ", expected " + core::to_string(dtype));
    if (t->shape != shape) fail(name, "shape " + shape_string(t->shape) + " does not match the model's " + shape_string(shape));
    auto bytes = file.bytes(*t);
    std::memcpy(dst, bytes.data(), bytes.size());
  };
  // Read into copies first: a file that fails half-way leaves the model as it was.
  core::aligned_vector<float> params(m.params.size());
  size_t expected = m.layout.params.size();
  for (const ParamInfo& p : m.layout.params) read(p.name, core::StDtype::kF32, p.shape, params.data() + p.offset);
  std::vector<std::vector<float>> biases(m.blocks.size());
  std::vector<std::vector<int32_t>> tables(m.blocks.size());
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    const Impl::Block& b = m.blocks[i];
    ++expected;
    if (b.moe.hash()) {
      tables[i].resize(b.moe.tid2eid().size());
      read(table_name(b.prefix), core::StDtype::kI32, {int64_t(m.config.vocab), int64_t(b.moe.top_k())}, tables[i].data());
      for (int32_t e : tables[i])
        if (e < 0 || e >= b.moe.experts())
          fail(table_name(b.prefix), "expert id " + std::to_string(e) + " outside [0, " + std::to_string(b.moe.experts()) + ")");
    } else {
      biases[i].resize(size_t(b.moe.experts()));
      read(bias_name(b.prefix), core::StDtype::kF32, {int64_t(b.moe.experts())}, biases[i].data());
    }
  }
  if (file.tensors().size() != expected)
    for (const core::StTensorInfo& t : file.tensors()) {
      bool known = m.layout.find(t.name) != nullptr;
      for (const Impl::Block& b : m.blocks) known = known || t.name == bias_name(b.prefix) || t.name == table_name(b.prefix);
      if (!known) fail(t.name, "not a tensor of the model " + m.config.name);
    }
  m.params = std::move(params);
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    if (m.blocks[i].moe.hash())
      m.blocks[i].moe.tid2eid() = std::move(tables[i]);
    else
      m.blocks[i].moe.bias() = std::move(biases[i]);
  }
}

}  // namespace trex::model
