// AttentionLayer::decode: one token at a time with a cache, computing for position t what the
// training forward computes for row t of its document (same formulas, same kernels where they
// take a single row; the single query's attention and indexer scores are small loops here,
// since the kernels' key sets are defined by a query's row within its call).
//
// Per token t: q, kv (roped at t) as in forward; kv enters the window ring. Ratio m > 0: the
// token's compressor projections enter the pending rows; when t closes a block (t + 1 = (i + 1) m)
// entry i is pooled from those rows (for m = 4 block i - 1 and block i, as the kernel does for
// a document), normed and roped at i m, so the query at t sees v_t = (t + 1) / m entries exactly
// as forward does. Ratio 128 attends to all of them; ratio 4 to the indexer's top min(k, v_t).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "trex/core/trace.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/model/attention.h"
#include "trex/model/attention_state.h"
#include "trex/model/matvec.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

// Appends the compressor projections of token t to the pending rows and, when t closes block
// i, returns true with the pooled (not yet normed) entry in k0 [hd].
bool compressor_step(const float* wkv, const float* wgate, const float* ape, const float* x,
                     int64_t d, int64_t hd, int ratio, int64_t t, std::vector<float>& kt,
                     std::vector<float>& zt, float* k0) {
  const int64_t C = kernels::compressor_width(ratio, hd);
  const int64_t rows = ratio == 4 ? 2 * ratio : ratio;
  if (int64_t(kt.size()) != rows * C) {
    kt.assign(static_cast<size_t>(rows * C), 0.f);
    zt.assign(static_cast<size_t>(rows * C), 0.f);
  }
  matvec(wkv, x, C, d, kt.data() + (t % rows) * C);
  matvec(wgate, x, C, d, zt.data() + (t % rows) * C);
  if ((t + 1) % ratio != 0) return false;
  const int64_t i = (t + 1) / ratio - 1;
  // The block(s) entry i pools, in token order, as a little document of its own.
  const int64_t first = ratio == 4 && i > 0 ? (i - 1) * ratio : i * ratio;
  const int64_t n = t + 1 - first;
  std::vector<float> lkt(static_cast<size_t>(n * C)), lzt(static_cast<size_t>(n * C)), lk(static_cast<size_t>(n / ratio * hd));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t src = ((first + r) % rows) * C;
    std::copy(kt.begin() + src, kt.begin() + src + C, lkt.begin() + r * C);
    std::copy(zt.begin() + src, zt.begin() + src + C, lzt.begin() + r * C);
  }
  kernels::kv_compress_forward(lkt.data(), lzt.data(), ape, lk.data(), n, hd, ratio);
  std::copy(lk.end() - hd, lk.end(), k0);  // the last entry of the little document is entry i
  return true;
}

}  // namespace

void AttentionLayer::decode(const AttentionParams& p, const float* x, AttentionCache& cache,
                            float* out) {
  TREX_TRACE(kAttention, "attn.decode");
  State& s = *s_;
  const int64_t d = s.d, qlr = s.qlr, H = s.H, hd = s.hd, m = s.ratio, win = s.win;
  const int64_t Hhd = H * hd;
  const int64_t t = cache.len;
  s.ensure_table(t + 1);

  // Query.
  std::vector<float> qa(static_cast<size_t>(qlr)), qr(static_cast<size_t>(qlr)), q0(static_cast<size_t>(Hhd)), qn(static_cast<size_t>(Hhd)),
      q(static_cast<size_t>(Hhd));
  matvec(p.wq_a, x, qlr, d, qa.data());
  s.norm_fwd(qa.data(), p.q_norm, qr.data(), 1, qlr);
  matvec(p.wq_b, qr.data(), Hhd, qlr, q0.data());
  s.norm_fwd(q0.data(), nullptr, qn.data(), H, hd);
  s.rope(qn.data(), q.data(), &t, 1, H, hd, +1);

  // Key = value into the window ring.
  if (int64_t(cache.window.size()) != win * hd) cache.window.assign(static_cast<size_t>(win * hd), 0.f);
  {
    std::vector<float> kva(static_cast<size_t>(hd)), kvn(static_cast<size_t>(hd));
    matvec(p.wkv, x, hd, d, kva.data());
    s.norm_fwd(kva.data(), p.kv_norm, kvn.data(), 1, hd);
    s.rope(kvn.data(), cache.window.data() + (t % win) * hd, &t, 1, 1, hd, +1);
  }

  // Compressor: a new entry when this token closes a block.
  if (m > 0) {
    std::vector<float> k0(static_cast<size_t>(hd)), kn(static_cast<size_t>(hd));
    if (compressor_step(p.comp_wkv, p.comp_wgate, p.comp_ape, x, d, hd, int(m), t, cache.kt,
                        cache.zt, k0.data())) {
      const int64_t i = (t + 1) / m - 1, ipos = i * m;
      s.norm_fwd(k0.data(), p.comp_norm, kn.data(), 1, hd);
      cache.comp.resize(static_cast<size_t>((i + 1) * hd));
      s.rope(kn.data(), cache.comp.data() + i * hd, &ipos, 1, 1, hd, +1);
    }
  }
  const int64_t visible = m > 0 ? (t + 1) / m : 0;

  // Which entries the query sees.
  std::vector<int64_t> selected;
  if (m == 4 && visible > 0) {
    const int64_t IH = s.IH, Ihd = s.Ihd;
    std::vector<float> k0(static_cast<size_t>(Ihd)), kn(static_cast<size_t>(Ihd));
    compressor_step(p.idx_comp_wkv, p.idx_comp_wgate, p.idx_comp_ape, x, d, Ihd, 4, t,
                    cache.idx_kt, cache.idx_zt, k0.data());
    if ((t + 1) % 4 == 0) {
      const int64_t i = (t + 1) / 4 - 1, ipos = i * 4;
      s.norm_fwd(k0.data(), p.idx_comp_norm, kn.data(), 1, Ihd);
      cache.idx_comp.resize(static_cast<size_t>((i + 1) * Ihd));
      s.rope(kn.data(), cache.idx_comp.data() + i * Ihd, &ipos, 1, 1, Ihd, +1);
    }
    std::vector<float> qIa(static_cast<size_t>(IH * Ihd)), qI(static_cast<size_t>(IH * Ihd)), w(static_cast<size_t>(IH));
    matvec(p.idx_wq_b, qr.data(), IH * Ihd, qlr, qIa.data());
    s.rope(qIa.data(), qI.data(), &t, 1, IH, Ihd, +1);
    matvec(p.idx_weights_proj, x, IH, d, w.data());
    const float wscale = float(1.0 / std::sqrt(double(Ihd)) / std::sqrt(double(IH)));
    std::vector<float> score(static_cast<size_t>(visible));
    for (int64_t i = 0; i < visible; ++i) {
      float sc = 0.f;
      for (int64_t h = 0; h < IH; ++h) {
        float u = 0.f;
        for (int64_t e = 0; e < Ihd; ++e) u += qI[size_t(h * Ihd + e)] * cache.idx_comp[size_t(i * Ihd + e)];
        sc += w[size_t(h)] * wscale * std::max(u, 0.f);
      }
      score[size_t(i)] = sc;
    }
    selected.resize(static_cast<size_t>(visible));
    std::iota(selected.begin(), selected.end(), 0);
    // Descending score, ties to the lower index (the kernel's rule).
    std::stable_sort(selected.begin(), selected.end(),
                     [&](int64_t a, int64_t b) { return score[size_t(a)] > score[size_t(b)]; });
    selected.resize(static_cast<size_t>(std::min<int64_t>(s.top_k, visible)));
  } else if (m == 4) {
    // No entry visible yet: the indexer's compressor still takes this token.
    std::vector<float> k0(static_cast<size_t>(s.Ihd));
    compressor_step(p.idx_comp_wkv, p.idx_comp_wgate, p.idx_comp_ape, x, d, s.Ihd, 4, t,
                    cache.idx_kt, cache.idx_zt, k0.data());
  } else if (m > 0) {
    selected.resize(static_cast<size_t>(visible));
    std::iota(selected.begin(), selected.end(), 0);
  }

  // Sparse attention of the one query with its sink.
  std::vector<const float*> keys;
  for (int64_t j = std::max<int64_t>(0, t - win + 1); j <= t; ++j)
    keys.push_back(cache.window.data() + (j % win) * hd);
  for (int64_t i : selected) keys.push_back(cache.comp.data() + i * hd);
  std::vector<float> o(static_cast<size_t>(Hhd), 0.f), sc(keys.size());
  const float tau = float(1.0 / std::sqrt(double(hd)));
  for (int64_t h = 0; h < H; ++h) {
    const float* qh = q.data() + h * hd;
    float mx = p.attn_sink[h];
    for (size_t j = 0; j < keys.size(); ++j) {
      float dotp = 0.f;
      for (int64_t e = 0; e < hd; ++e) dotp += qh[e] * keys[j][e];
      sc[j] = tau * dotp;
      mx = std::max(mx, sc[j]);
    }
    float z = std::exp(p.attn_sink[h] - mx);
    for (size_t j = 0; j < keys.size(); ++j) {
      sc[j] = std::exp(sc[j] - mx);
      z += sc[j];
    }
    float* oh = o.data() + h * hd;
    for (size_t j = 0; j < keys.size(); ++j) {
      const float pj = sc[j] / z;
      for (int64_t e = 0; e < hd; ++e) oh[e] += pj * keys[j][e];
    }
  }

  // Inverse RoPE and the grouped output projection.
  std::vector<float> oi(static_cast<size_t>(Hhd));
  s.rope(o.data(), oi.data(), &t, 1, H, hd, -1);
  const int64_t gw = Hhd / s.G, Gol = s.G * s.olr;
  std::vector<float> u(static_cast<size_t>(Gol));
  for (int64_t g = 0; g < s.G; ++g)
    matvec(p.wo_a + g * s.olr * gw, oi.data() + g * gw, s.olr, gw, u.data() + g * s.olr);
  matvec(p.wo_b, u.data(), d, Gol, out);
  cache.len = t + 1;
}

}  // namespace trex::model

namespace trex::model {

namespace {

// The last `rows` rows of src [T, width] into a ring [rows, width] at row t % rows.
void fill_ring(const float* src, int64_t T, int64_t width, int64_t rows, std::vector<float>& ring) {
  ring.assign(static_cast<size_t>(rows * width), 0.f);
  for (int64_t t = std::max<int64_t>(0, T - rows); t < T; ++t)
    std::copy(src + t * width, src + (t + 1) * width, ring.begin() + (t % rows) * width);
}

}  // namespace

void AttentionLayer::prefill(const AttentionParams& p, const float* x, int64_t T,
                             AttentionCache& cache, float* out) {
  TREX_TRACE(kAttention, "attn.prefill");
  State& s = *s_;
  if (cache.len != 0)
    throw InputError::field("cache", "prefill needs an empty cache (it holds " +
                                         std::to_string(cache.len) + " tokens)");
  const DocSpan doc{0, T};
  s.skip_indexer_loss = true;
  try {
    forward(p, x, std::span<const DocSpan>(&doc, 1), T, out);
  } catch (...) {
    s.skip_indexer_loss = false;
    throw;
  }
  s.skip_indexer_loss = false;
  const int64_t hd = s.hd, m = s.ratio;
  // Window: the roped kv rows of the last win tokens.
  fill_ring(s.kv.data(), T, hd, s.win, cache.window);
  if (m > 0) {
    // Pending compressor rows: the open block and, for ratio 4, the block before it.
    const int64_t rows = m == 4 ? 2 * m : m;
    fill_ring(s.kt.data(), T, s.C, rows, cache.kt);
    fill_ring(s.zt.data(), T, s.C, rows, cache.zt);
    cache.comp.assign(s.kc.begin(), s.kc.begin() + s.n_entries * hd);
  }
  if (m == 4) {
    const int64_t w2 = 2 * s.Ihd;
    fill_ring(s.kIt.data(), T, w2, 8, cache.idx_kt);
    fill_ring(s.kIz.data(), T, w2, 8, cache.idx_zt);
    cache.idx_comp.assign(s.kI.begin(), s.kI.begin() + s.n_entries * s.Ihd);
  }
  cache.len = T;
}

}  // namespace trex::model
