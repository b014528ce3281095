// AttentionLayer: spec sections 6-8 and 12 composed from the kernels. Forward and backward sit
// side by side; each backward step undoes the forward step of the same number.
//
// Forward (T packed tokens, pos = position within the token's document):
//   1 qa = wq_a x;  qr = RMSNorm(qa; q_norm);  q0 = wq_b qr [T, H, hd]
//   2 qn = RMSNorm(q0) per head (weight-free);  q = RoPE(qn, pos)
//   3 kva = wkv x;  kv = RoPE(RMSNorm(kva; kv_norm), pos)
//   4 (ratio > 0) kt = comp_wkv x, zt = comp_wgate x; per document kc0 = pool(kt, zt, ape);
//     kc = RoPE(RMSNorm(kc0; comp_norm), i m)
//   5 comp_idx: ratio 128 every visible entry; ratio 4 the indexer's top-k (section 8)
//   6 per document o, lse = sparse attention(q, kv, kc, comp_idx, sink)
//   7 oi = RoPE^-1(o, pos);  u_g = wo_a[g] oi_g;  out = wo_b u
//   8 (ratio 4) L_I and the indexer's gradients w.r.t. qI, kI, w (teacher = step 6's comp_prob)
// Projections are GEMMs over all T tokens; steps 4-6 and 8 run one document per kernel call.
// Gradients of GEMM weights are accumulated by sgemm with beta = 1; kernels that overwrite
// their weight gradient (RMSNorm dw, dape, dsink) write a scratch buffer that is then added.
#include "trex/model/attention.h"
#include "trex/model/attention_state.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "trex/core/trace.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/indexer.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/model/packed_weights.h"
#include "trex/model/side_by_side.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

using kernels::Trans;
using attention_detail::add_into;
using attention_detail::Buf;
using attention_detail::ptr;

// y [T, out] = x [T, in] W^T (W [out, in]), y row stride ldy, x row stride ldx.
void linear(const float* x, int64_t ldx, const float* w, int64_t T, int64_t out, int64_t in,
            float* y, int64_t ldy, float beta = 0.f) {
  if (T == 0) return;
  kernels::sgemm(Trans::kNo, Trans::kYes, T, out, in, 1.f, x, ldx, w, in, beta, y, ldy);
}
// dx [T, in] (= or +=) dy [T, out] W.
void linear_dx(const float* dy, int64_t lddy, const float* w, int64_t T, int64_t out, int64_t in,
               float* dx, int64_t lddx, float beta) {
  if (T == 0) return;
  kernels::sgemm(Trans::kNo, Trans::kNo, T, in, out, 1.f, dy, lddy, w, in, beta, dx, lddx);
}
// dW [out, in] += dy^T x.
void linear_dw(const float* dy, int64_t lddy, const float* x, int64_t ldx, int64_t T, int64_t out,
               int64_t in, float* dw) {
  if (T == 0) return;
  kernels::sgemm(Trans::kYes, Trans::kNo, out, in, T, 1.f, dy, lddy, x, ldx, 1.f, dw, in);
}

}  // namespace

// A projection of forward's: the GEMM, or in a prefill of at most kPackedPrefillTokens tokens
// the decoder's packed copy of w (packed_weights.h): the GEMM packs panels of w on every call,
// which for a short prompt costs more than the product (session 12 of issue 16: ~21% of a
// 16-token prefill), and the decoder has w packed already. Strided rows are gathered and
// scattered around the packed product, which takes them contiguous.
void AttentionLayer::State::project(const float* x, int64_t ldx, const float* w, int64_t T,
                                    int64_t out, int64_t in, float* y, int64_t ldy) {
  if (!packed_prefill(T)) {
    linear(x, ldx, w, T, out, in, y, ldy);
    return;
  }
  const float* xc = x;
  if (ldx != in) {
    float* g = ptr(pack_x, T * in);
    for (int64_t t = 0; t < T; ++t) std::copy(x + t * ldx, x + t * ldx + in, g + t * in);
    xc = g;
  }
  float* yc = ldy == out ? y : ptr(pack_y, T * out);
  matvec_rows(prefill_packed, w, xc, T, out, in, yc);
  if (yc != y)
    for (int64_t t = 0; t < T; ++t) std::copy(yc + t * out, yc + (t + 1) * out, y + t * ldy);
}


AttentionLayer::AttentionLayer(const ModelConfig& config, int layer, int ratio_override)
    : s_(std::make_unique<State>()) {
  const AttentionConfig& a = config.attention;
  if (a.kind != AttentionKind::kV4)
    throw InputError::field("attention.kind", "AttentionLayer needs a \"v4\" config");
  State& s = *s_;
  s.ratio = ratio_override >= 0 ? ratio_override : config.compress_ratio(layer);
  if (s.ratio < 0)
    throw InputError::field("attention.compress_ratios", "a ratio must be 0 or positive");
  s.d = config.hidden;
  s.qlr = a.q_lora_rank;
  s.H = a.heads;
  s.hd = a.head_dim;
  s.rd = a.rope_dims;
  s.G = a.o_groups;
  s.olr = a.o_lora_rank;
  s.win = a.window;
  s.C = s.ratio > 0 ? kernels::compressor_width(s.ratio, s.hd) : 0;
  s.IH = config.indexer.heads;
  s.Ihd = config.indexer.head_dim;
  s.top_k = config.indexer.top_k;
  s.eps = float(config.norm_eps);
  s.lambda = float(config.indexer.loss_weight);
  if (s.qlr <= 0 || s.G <= 0 || s.H % s.G != 0 || s.win <= 0)
    throw InputError::field("attention", "v4 attention needs q_lora_rank > 0, window > 0 "
                                               "and heads divisible by o_groups");
  if (s.ratio == 4 && (s.IH <= 0 || s.Ihd < s.rd || s.top_k <= 0))
    throw InputError::field("indexer", "ratio-4 layers need indexer heads, head_dim >= "
                                             "rope_dims and top_k > 0");
  kernels::RopeFreqConfig& f = s.freq_config;
  f.rope_dim = s.rd;
  f.base = s.ratio > 0 ? a.compress_rope_theta : a.rope_theta;
  f.yarn = s.ratio > 0 && a.yarn_factor > 1;
  f.factor = a.yarn_factor;
  f.original_len = a.yarn_original_length;
  f.beta_fast = a.yarn_beta_fast;
  f.beta_slow = a.yarn_beta_slow;
  s.freq = kernels::rope_frequencies(f);
  s.ensure_table(std::max<int64_t>(config.train_seq_len, 64));
}

AttentionLayer::~AttentionLayer() = default;
AttentionLayer::AttentionLayer(AttentionLayer&&) noexcept = default;
AttentionLayer& AttentionLayer::operator=(AttentionLayer&&) noexcept = default;

int AttentionLayer::ratio() const { return s_->ratio; }

std::vector<int32_t> AttentionLayer::last_selection() const { return s_->comp_idx; }

double AttentionLayer::forward(const AttentionParams& p, const float* x,
                               std::span<const DocSpan> docs, int64_t T, float* out) {
  State& s = *s_;
  const int64_t d = s.d, qlr = s.qlr, H = s.H, hd = s.hd, m = s.ratio;
  const int64_t Hhd = H * hd;

  // Documents must tile [0, T) in order.
  int64_t next = 0, max_len = 1;
  for (const DocSpan& doc : docs) {
    if (doc.begin != next || doc.len < 1)
      throw InputError::field("docs", "document spans must cover [0, T) in order, each "
                                            "len >= 1 (span at " + std::to_string(doc.begin) +
                                            " expected at " + std::to_string(next) + ")");
    next += doc.len;
    max_len = std::max(max_len, doc.len);
  }
  if (next != T)
    throw InputError::field("docs", "document spans cover " + std::to_string(next) +
                                              " tokens, expected T = " + std::to_string(T));
  s.T = T;
  s.docs.assign(docs.begin(), docs.end());
  s.ensure_table(max_len);
  s.pos.resize(size_t(T));
  for (const DocSpan& doc : docs)
    for (int64_t t = 0; t < doc.len; ++t) s.pos[size_t(doc.begin + t)] = t;
  const size_t nd = docs.size();
  s.comp_off.assign(nd + 1, 0);
  for (size_t i = 0; i < nd; ++i)
    s.comp_off[i + 1] = s.comp_off[i] + (m > 0 ? kernels::compressor_entries(docs[i].len, int(m)) : 0);
  s.n_entries = s.comp_off[nd];
  s.comp_pos.resize(size_t(s.n_entries));
  for (size_t i = 0; i < nd; ++i)
    for (int64_t e = s.comp_off[i]; e < s.comp_off[i + 1]; ++e)
      s.comp_pos[size_t(e)] = (e - s.comp_off[i]) * m;

  float* xs = ptr(s.x, T * d);
  std::copy(x, x + T * d, xs);

  // 1-2: query.
  float* qa = ptr(s.qa, T * qlr);
  float* qr = ptr(s.qr, T * qlr);
  float* q0 = ptr(s.q0, T * Hhd);
  float* q = ptr(s.q, T * Hhd);
  {
    TREX_TRACE(kGemm, "attn.wq_a");
    s.project(xs, d, p.wq_a, T, qlr, d, qa, qlr);
  }
  s.norm_fwd(qa, p.q_norm, qr, T, qlr);
  {
    TREX_TRACE(kGemm, "attn.wq_b");
    s.project(qr, qlr, p.wq_b, T, Hhd, qlr, q0, Hhd);
  }
  {
    TREX_TRACE(kElementwise, "attn.q_norm_rope");
    float* qn = ptr(s.dtmp, T * Hhd);
    s.norm_fwd(q0, nullptr, qn, T * H, hd);
    s.rope(qn, q, s.pos.data(), T, H, hd, +1);
  }
  // 3: shared key = value.
  float* kva = ptr(s.kva, T * hd);
  float* kv = ptr(s.kv, T * hd);
  {
    TREX_TRACE(kGemm, "attn.wkv");
    s.project(xs, d, p.wkv, T, hd, d, kva, hd);
  }
  {
    TREX_TRACE(kElementwise, "attn.kv_norm_rope");
    float* kvn = ptr(s.dtmp, T * hd);
    s.norm_fwd(kva, p.kv_norm, kvn, T, hd);
    s.rope(kvn, kv, s.pos.data(), T, 1, hd, +1);
  }
  // 4: compressor.
  float* kc = nullptr;
  if (m > 0) {
    float* kt = ptr(s.kt, T * s.C);
    float* zt = ptr(s.zt, T * s.C);
    {
      TREX_TRACE(kGemm, "attn.compressor");
      s.project(xs, d, p.comp_wkv, T, s.C, d, kt, s.C);
      s.project(xs, d, p.comp_wgate, T, s.C, d, zt, s.C);
    }
    float* kc0 = ptr(s.kc0, std::max<int64_t>(1, s.n_entries * hd));
    kc = ptr(s.kc, std::max<int64_t>(1, s.n_entries * hd));
    // The pooling's softmax statistics for the backward (ratio != 4; 3 hd floats per entry).
    const int64_t sw = kernels::compressor_stats_width(int(m), hd);
    float* cst = ptr(s.comp_stats, std::max<int64_t>(1, s.n_entries * sw));
    {
      TREX_TRACE(kAttention, "attn.kv_compress");
      for (size_t i = 0; i < nd; ++i) {
        if (s.comp_off[i + 1] == s.comp_off[i]) continue;
        kernels::kv_compress_forward_keeping_stats(kt + docs[i].begin * s.C, zt + docs[i].begin * s.C,
                                                   p.comp_ape, kc0 + s.comp_off[i] * hd,
                                                   cst + s.comp_off[i] * sw, docs[i].len, hd, int(m));
      }
    }
    TREX_TRACE(kElementwise, "attn.comp_norm_rope");
    float* kcn = ptr(s.dtmp, std::max<int64_t>(1, s.n_entries * hd));
    s.norm_fwd(kc0, p.comp_norm, kcn, s.n_entries, hd);
    s.rope(kcn, kc, s.comp_pos.data(), s.n_entries, 1, hd, +1);
  }

  // 5: which compressed entries each query attends to.
  s.k_comp.assign(nd, 0);
  s.idx_off.assign(nd + 1, 0);
  s.comp_idx.clear();
  const int64_t IH = s.IH, Ihd = s.Ihd;
  if (m == 4) {
    TREX_TRACE(kAttention, "attn.indexer_select");
    float* qIa = ptr(s.dtmp, T * IH * Ihd);
    float* qI = ptr(s.qI, T * IH * Ihd);
    float* kIt = ptr(s.kIt, T * 2 * Ihd);
    float* kIz = ptr(s.kIz, T * 2 * Ihd);
    float* wI = ptr(s.wI, T * IH);
    s.project(qr, qlr, p.idx_wq_b, T, IH * Ihd, qlr, qIa, IH * Ihd);
    s.rope(qIa, qI, s.pos.data(), T, IH, Ihd, +1);
    s.project(xs, d, p.idx_comp_wkv, T, 2 * Ihd, d, kIt, 2 * Ihd);
    s.project(xs, d, p.idx_comp_wgate, T, 2 * Ihd, d, kIz, 2 * Ihd);
    s.project(xs, d, p.idx_weights_proj, T, IH, d, wI, IH);
    const float wscale = float(1.0 / std::sqrt(double(Ihd)) / std::sqrt(double(IH)));
    for (int64_t i = 0; i < T * IH; ++i) wI[i] *= wscale;
    float* kI0 = ptr(s.kI0, std::max<int64_t>(1, s.n_entries * Ihd));
    float* kI = ptr(s.kI, std::max<int64_t>(1, s.n_entries * Ihd));
    for (size_t i = 0; i < nd; ++i) {
      if (s.comp_off[i + 1] == s.comp_off[i]) continue;
      kernels::kv_compress_forward(kIt + docs[i].begin * 2 * Ihd, kIz + docs[i].begin * 2 * Ihd,
                                   p.idx_comp_ape, kI0 + s.comp_off[i] * Ihd, docs[i].len, Ihd, 4);
    }
    float* kIn = ptr(s.dtmp, std::max<int64_t>(1, s.n_entries * Ihd));  // qIa is consumed
    s.norm_fwd(kI0, p.idx_comp_norm, kIn, s.n_entries, Ihd);
    s.rope(kIn, kI, s.comp_pos.data(), s.n_entries, 1, Ihd, +1);
    for (size_t i = 0; i < nd; ++i) {
      const int64_t n = s.comp_off[i + 1] - s.comp_off[i];
      s.k_comp[i] = std::min<int64_t>(s.top_k, n);
      s.idx_off[i + 1] = s.idx_off[i] + docs[i].len * s.k_comp[i];
    }
    s.comp_idx.assign(size_t(s.idx_off[nd]), -1);
    std::vector<float> top;
    for (size_t i = 0; i < nd; ++i) {
      if (s.k_comp[i] == 0) continue;
      kernels::IndexerShape ish;
      ish.s = docs[i].len;
      ish.heads = IH;
      ish.hd = Ihd;
      ish.n_comp = s.comp_off[i + 1] - s.comp_off[i];
      ish.top_k = s.k_comp[i];
      ish.ratio = 4;
      top.resize(size_t(ish.s * ish.top_k));
      kernels::indexer_select(qI + docs[i].begin * IH * Ihd, kI + s.comp_off[i] * Ihd,
                              wI + docs[i].begin * IH, s.comp_idx.data() + s.idx_off[i], top.data(),
                              ish);
    }
  } else if (m > 0) {
    for (size_t i = 0; i < nd; ++i) {
      int64_t kc_cols = 0;
      std::vector<int32_t> idx = kernels::sparse_attention_dense_index(
          docs[i].len, int(m), s.comp_off[i + 1] - s.comp_off[i], &kc_cols);
      s.k_comp[i] = kc_cols;
      s.idx_off[i + 1] = s.idx_off[i] + int64_t(idx.size());
      s.comp_idx.insert(s.comp_idx.end(), idx.begin(), idx.end());
    }
  }

  // 6: sparse attention per document.
  float* o = ptr(s.o, T * Hhd);
  float* lse = ptr(s.lse, T * H);
  float* comp_prob = m == 4 ? ptr(s.comp_prob, std::max<int64_t>(1, s.idx_off[nd])) : nullptr;
  {
    TREX_TRACE(kAttention, "attn.sparse_attention");
    for (size_t i = 0; i < nd; ++i) {
      kernels::SparseAttnShape sh;
      sh.s = docs[i].len;
      sh.heads = H;
      sh.hd = hd;
      sh.window = s.win;
      sh.n_comp = m > 0 ? s.comp_off[i + 1] - s.comp_off[i] : 0;
      sh.k_comp = s.k_comp[i];
      const int64_t b = docs[i].begin;
      kernels::sparse_attention_forward(
          q + b * Hhd, kv + b * hd, m > 0 ? kc + s.comp_off[i] * hd : nullptr,
          sh.k_comp > 0 ? s.comp_idx.data() + s.idx_off[i] : nullptr, p.attn_sink, o + b * Hhd,
          lse + b * H, comp_prob && sh.k_comp > 0 ? comp_prob + s.idx_off[i] : nullptr, sh);
    }
  }

  // 7: inverse RoPE and the grouped low-rank output projection.
  float* oi = ptr(s.oi, T * Hhd);
  {
    TREX_TRACE(kElementwise, "attn.o_inverse_rope");
    s.rope(o, oi, s.pos.data(), T, H, hd, -1);
  }
  const int64_t gw = Hhd / s.G, Gol = s.G * s.olr;
  float* u = ptr(s.u, T * Gol);
  {
    TREX_TRACE(kGemm, "attn.wo");
    if (s.packed_prefill(T)) {
      for (int64_t g = 0; g < s.G; ++g)  // one after the other: project() has one scratch
        s.project(oi + g * gw, Hhd, p.wo_a + g * s.olr * gw, T, s.olr, gw, u + g * s.olr, Gol);
    } else {
      // The groups' products are independent (side_by_side.h).
      std::vector<std::function<void()>> groups;
      for (int64_t g = 0; g < s.G; ++g)
        groups.push_back([&, g] { linear(oi + g * gw, Hhd, p.wo_a + g * s.olr * gw, T, s.olr, gw, u + g * s.olr, Gol); });
      side_by_side(groups);
    }
    s.project(u, Gol, p.wo_b, T, d, Gol, out, d);
  }

  // 8: the indexer's KL loss against the main attention's (detached) probabilities. Every row
  // with a selection counts once over the whole batch, so each document's call gets lambda
  // scaled by its share of those rows.
  s.has_indexer_grads = false;
  if (m != 4 || s.skip_indexer_loss) return 0.0;
  TREX_TRACE(kAttention, "attn.indexer_loss");
  int64_t rows_total = 0;
  std::vector<int64_t> rows_doc(nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t k = s.k_comp[i];
    if (k == 0) continue;
    for (int64_t t = 0; t < docs[i].len; ++t)
      rows_doc[i] += s.comp_idx[size_t(s.idx_off[i] + t * k)] >= 0 ? 1 : 0;
    rows_total += rows_doc[i];
  }
  float* dqI = ptr(s.dqI, T * IH * Ihd);
  float* dkI = ptr(s.dkI, std::max<int64_t>(1, s.n_entries * Ihd));
  float* dwI = ptr(s.dwI, T * IH);
  std::fill(dqI, dqI + T * IH * Ihd, 0.f);
  std::fill(dkI, dkI + std::max<int64_t>(1, s.n_entries * Ihd), 0.f);
  std::fill(dwI, dwI + T * IH, 0.f);
  double loss = 0;
  for (size_t i = 0; i < nd; ++i) {
    if (rows_doc[i] == 0) continue;
    kernels::IndexerShape ish;
    ish.s = docs[i].len;
    ish.heads = IH;
    ish.hd = Ihd;
    ish.n_comp = s.comp_off[i + 1] - s.comp_off[i];
    ish.top_k = s.k_comp[i];
    ish.ratio = 4;
    const float lam = float(double(s.lambda) * double(rows_doc[i]) / double(rows_total));
    const int64_t b = docs[i].begin;
    loss += kernels::indexer_kl_backward(s.qI.data() + b * IH * Ihd, s.kI.data() + s.comp_off[i] * Ihd,
                                         s.wI.data() + b * IH, s.comp_idx.data() + s.idx_off[i],
                                         comp_prob + s.idx_off[i], lam, dqI + b * IH * Ihd,
                                         dkI + s.comp_off[i] * Ihd, dwI + b * IH, ish);
  }
  s.has_indexer_grads = true;
  return loss;
}

void AttentionLayer::backward(const AttentionParams& p, const float* dout, float* dx,
                              const AttentionGrads& g) {
  State& s = *s_;
  const int64_t T = s.T, d = s.d, qlr = s.qlr, H = s.H, hd = s.hd, m = s.ratio;
  const int64_t Hhd = H * hd, gw = Hhd / s.G, Gol = s.G * s.olr;
  const size_t nd = s.docs.size();
  const float* xs = s.x.data();

  // 7: output projection, inverse RoPE.
  float* du = ptr(s.du, T * Gol);
  float* doi = ptr(s.doi, T * Hhd);
  {
    TREX_TRACE(kGemm, "attn.wo_backward");
    // Input and weight gradients are independent products (side_by_side.h), and so are the
    // groups'.
    side_by_side({[&] { linear_dx(dout, d, p.wo_b, T, d, Gol, du, Gol, 0.f); },
                  [&] { linear_dw(dout, d, s.u.data(), Gol, T, d, Gol, g.wo_b); }});
    std::vector<std::function<void()>> groups;
    for (int64_t gi = 0; gi < s.G; ++gi) {
      const float* wg = p.wo_a + gi * s.olr * gw;
      groups.push_back([&, gi, wg] { linear_dx(du + gi * s.olr, Gol, wg, T, s.olr, gw, doi + gi * gw, Hhd, 0.f); });
      groups.push_back([&, gi] {
        linear_dw(du + gi * s.olr, Gol, s.oi.data() + gi * gw, Hhd, T, s.olr, gw, g.wo_a + gi * s.olr * gw);
      });
    }
    side_by_side(groups);
  }
  float* dO = ptr(s.dO, T * Hhd);
  s.rope(doi, dO, s.pos.data(), T, H, hd, +1);

  // 6: sparse attention per document.
  float* dq = ptr(s.dq, T * Hhd);
  float* dkv = ptr(s.dkv, T * hd);
  float* dkc = m > 0 ? ptr(s.dkc, std::max<int64_t>(1, s.n_entries * hd)) : nullptr;
  {
    TREX_TRACE(kAttention, "attn.sparse_attention_backward");
    std::vector<float> dsink(static_cast<size_t>(H));
    for (size_t i = 0; i < nd; ++i) {
      kernels::SparseAttnShape sh;
      sh.s = s.docs[i].len;
      sh.heads = H;
      sh.hd = hd;
      sh.window = s.win;
      sh.n_comp = m > 0 ? s.comp_off[i + 1] - s.comp_off[i] : 0;
      sh.k_comp = s.k_comp[i];
      const int64_t b = s.docs[i].begin;
      float* ws = ptr(s.dwork, std::max<int64_t>(1, kernels::sparse_attention_backward_workspace(sh)));
      kernels::sparse_attention_backward(
          s.q.data() + b * Hhd, s.kv.data() + b * hd,
          m > 0 ? s.kc.data() + s.comp_off[i] * hd : nullptr,
          sh.k_comp > 0 ? s.comp_idx.data() + s.idx_off[i] : nullptr, p.attn_sink,
          s.lse.data() + b * H, dO + b * Hhd, dq + b * Hhd, dkv + b * hd,
          m > 0 ? dkc + s.comp_off[i] * hd : nullptr, dsink.data(), sh, ws);
      add_into(g.attn_sink, dsink.data(), H);
    }
  }

  // 4: compressor (entries not attended to get dkc = 0 from the kernel).
  float* dtmp = nullptr;
  if (m > 0) {
    TREX_TRACE(kAttention, "attn.compressor_backward");
    float* dkcn = ptr(s.dtmp, std::max<int64_t>(1, s.n_entries * hd));
    s.rope(dkc, dkcn, s.comp_pos.data(), s.n_entries, 1, hd, -1);
    float* dkc0 = dkc;  // dkc is consumed by the rotation above
    s.norm_bwd(s.kc0.data(), p.comp_norm, dkcn, dkc0, g.comp_norm, s.n_entries, hd);
    float* dkt = ptr(s.dkt, T * s.C);
    float* dzt = ptr(s.dzt, T * s.C);
    float* dape = ptr(s.dape, m * s.C);
    for (size_t i = 0; i < nd; ++i) {
      const int64_t b = s.docs[i].begin;
      if (s.comp_off[i + 1] == s.comp_off[i]) {
        std::fill(dkt + b * s.C, dkt + (b + s.docs[i].len) * s.C, 0.f);
        std::fill(dzt + b * s.C, dzt + (b + s.docs[i].len) * s.C, 0.f);
        continue;
      }
      const int64_t sw = kernels::compressor_stats_width(int(m), hd);
      kernels::kv_compress_backward_from_stats(s.kt.data() + b * s.C, s.zt.data() + b * s.C, p.comp_ape,
                                               s.comp_stats.data() + s.comp_off[i] * sw,
                                               dkc0 + s.comp_off[i] * hd, dkt + b * s.C, dzt + b * s.C,
                                               dape, s.docs[i].len, hd, int(m));
      add_into(g.comp_ape, dape, m * s.C);
    }
    TREX_TRACE(kGemm, "attn.compressor_backward_gemm");
    side_by_side({[&] {
                    linear_dx(dkt, s.C, p.comp_wkv, T, s.C, d, dx, d, 0.f);
                    linear_dx(dzt, s.C, p.comp_wgate, T, s.C, d, dx, d, 1.f);
                  },
                  [&] { linear_dw(dkt, s.C, xs, d, T, s.C, d, g.comp_wkv); },
                  [&] { linear_dw(dzt, s.C, xs, d, T, s.C, d, g.comp_wgate); }});
  }
  const float dx_beta = m > 0 ? 1.f : 0.f;

  // 3: key = value.
  {
    TREX_TRACE(kElementwise, "attn.kv_backward");
    dtmp = ptr(s.dtmp, T * hd);
    s.rope(dkv, dtmp, s.pos.data(), T, 1, hd, -1);
    s.norm_bwd(s.kva.data(), p.kv_norm, dtmp, dkv, g.kv_norm, T, hd);  // dkv := d kva
  }
  {
    TREX_TRACE(kGemm, "attn.wkv_backward");
    side_by_side({[&] { linear_dx(dkv, hd, p.wkv, T, hd, d, dx, d, dx_beta); },
                  [&] { linear_dw(dkv, hd, xs, d, T, hd, d, g.wkv); }});
  }

  // 1-2: query.
  {
    TREX_TRACE(kElementwise, "attn.q_backward");
    dtmp = ptr(s.dtmp, T * Hhd);
    s.rope(dq, dtmp, s.pos.data(), T, H, hd, -1);
    s.norm_bwd(s.q0.data(), nullptr, dtmp, dq, nullptr, T * H, hd);  // dq := d q0
  }
  float* dqr = ptr(s.dtmp, T * qlr);
  {
    TREX_TRACE(kGemm, "attn.wq_b_backward");
    side_by_side({[&] { linear_dx(dq, Hhd, p.wq_b, T, Hhd, qlr, dqr, qlr, 0.f); },
                  [&] { linear_dw(dq, Hhd, s.qr.data(), qlr, T, Hhd, qlr, g.wq_b); }});
  }
  float* dqa = ptr(s.du, T * qlr);  // du is consumed
  s.norm_bwd(s.qa.data(), p.q_norm, dqr, dqa, g.q_norm, T, qlr);
  {
    TREX_TRACE(kGemm, "attn.wq_a_backward");
    side_by_side({[&] { linear_dx(dqa, qlr, p.wq_a, T, qlr, d, dx, d, 1.f); },
                  [&] { linear_dw(dqa, qlr, xs, d, T, qlr, d, g.wq_a); }});
  }

  // 8: the indexer's parameters from L_I (x and qr detached: nothing reaches dx).
  if (!s.has_indexer_grads) return;
  TREX_TRACE(kAttention, "attn.indexer_backward");
  const int64_t IH = s.IH, Ihd = s.Ihd;
  float* dqIa = ptr(s.doi, T * IH * Ihd);
  s.rope(s.dqI.data(), dqIa, s.pos.data(), T, IH, Ihd, -1);
  linear_dw(dqIa, IH * Ihd, s.qr.data(), qlr, T, IH * Ihd, qlr, g.idx_wq_b);
  const float wscale = float(1.0 / std::sqrt(double(Ihd)) / std::sqrt(double(IH)));
  float* dwa = ptr(s.dO, T * IH);
  for (int64_t i = 0; i < T * IH; ++i) dwa[i] = s.dwI[size_t(i)] * wscale;
  linear_dw(dwa, IH, xs, d, T, IH, d, g.idx_weights_proj);
  if (s.n_entries == 0) return;
  float* dkIn = ptr(s.dtmp, s.n_entries * Ihd);
  s.rope(s.dkI.data(), dkIn, s.comp_pos.data(), s.n_entries, 1, Ihd, -1);
  float* dkI0 = ptr(s.dkc, s.n_entries * Ihd);
  s.norm_bwd(s.kI0.data(), p.idx_comp_norm, dkIn, dkI0, g.idx_comp_norm, s.n_entries, Ihd);
  float* dkt = ptr(s.dkt, T * 2 * Ihd);
  float* dzt = ptr(s.dzt, T * 2 * Ihd);
  float* dape = ptr(s.dape, 4 * 2 * Ihd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t b = s.docs[i].begin;
    if (s.comp_off[i + 1] == s.comp_off[i]) {
      std::fill(dkt + b * 2 * Ihd, dkt + (b + s.docs[i].len) * 2 * Ihd, 0.f);
      std::fill(dzt + b * 2 * Ihd, dzt + (b + s.docs[i].len) * 2 * Ihd, 0.f);
      continue;
    }
    kernels::kv_compress_backward(s.kIt.data() + b * 2 * Ihd, s.kIz.data() + b * 2 * Ihd,
                                  p.idx_comp_ape, dkI0 + s.comp_off[i] * Ihd, dkt + b * 2 * Ihd,
                                  dzt + b * 2 * Ihd, dape, s.docs[i].len, Ihd, 4);
    add_into(g.idx_comp_ape, dape, 4 * 2 * Ihd);
  }
  linear_dw(dkt, 2 * Ihd, xs, d, T, 2 * Ihd, d, g.idx_comp_wkv);
  linear_dw(dzt, 2 * Ihd, xs, d, T, 2 * Ihd, d, g.idx_comp_wgate);
}

}  // namespace trex::model
