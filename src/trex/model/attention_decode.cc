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
#include "trex/model/chain_dots.h"
#include "trex/model/packed_weights.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

// Appends the compressor projections of token t (kt_row, zt_row [C], computed by the caller) to
// the pending rows and, when t closes block i, returns true with the pooled (not yet normed)
// entry in k0 [hd].
bool compressor_push(const float* kt_row, const float* zt_row, const float* ape, int64_t hd,
                     int ratio, int64_t t, std::vector<float>& kt, std::vector<float>& zt,
                     float* k0) {
  const int64_t C = kernels::compressor_width(ratio, hd);
  const int64_t rows = ratio == 4 ? 2 * ratio : ratio;
  if (int64_t(kt.size()) != rows * C) {
    kt.assign(static_cast<size_t>(rows * C), 0.f);
    zt.assign(static_cast<size_t>(rows * C), 0.f);
  }
  std::copy(kt_row, kt_row + C, kt.begin() + (t % rows) * C);
  std::copy(zt_row, zt_row + C, zt.begin() + (t % rows) * C);
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
  AttentionCache* one = &cache;
  decode_rows(p, x, 1, &one, out);
}

void AttentionLayer::decode_rows(const AttentionParams& p, const float* x, int64_t B,
                                 AttentionCache* const* caches, float* out, PackedWeights* packed) {
  TREX_TRACE(kAttention, "attn.decode");
  if (B < 1) return;
  State& s = *s_;
  const int64_t d = s.d, qlr = s.qlr, H = s.H, hd = s.hd, m = s.ratio, win = s.win;
  const int64_t Hhd = H * hd;
  const size_t Bs = size_t(B);
  // Consecutive rows of one cache are its next tokens in order (a prompt fed in chunks): each
  // row's position follows the one before it, and the per-row loop below appends each row to
  // the cache before the next reads it, as one-row calls one after the other would.
  State::DecodeScratch& ds = s.dec;
  // Sized (not cleared) to this call's rows: each is overwritten before it is read.
  auto fit = [](auto& v, size_t n) -> auto& {
    v.resize(n);
    return v;
  };
  std::vector<int64_t>& pos = fit(ds.pos, Bs);
  for (size_t b = 0; b < Bs; ++b)
    pos[b] = b > 0 && caches[b] == caches[b - 1] ? pos[b - 1] + 1 : caches[b]->len;
  s.ensure_table(*std::max_element(pos.begin(), pos.end()) + 1);

  // The rows' projections, each weight read once for all of them (matvec_rows sums each row as
  // it would alone).
  std::vector<float>& qa = fit(ds.qa, Bs * size_t(qlr));
  std::vector<float>& qr = fit(ds.qr, qa.size());
  std::vector<float>& q0 = fit(ds.q0, Bs * size_t(Hhd));
  std::vector<float>& qn = fit(ds.qn, q0.size());
  std::vector<float>& q = fit(ds.q, q0.size());
  std::vector<float>& kva = fit(ds.kva, Bs * size_t(hd));
  std::vector<float>& kvn = fit(ds.kvn, kva.size());
  matvec_rows(packed, p.wq_a, x, B, qlr, d, qa.data());
  s.norm_fwd(qa.data(), p.q_norm, qr.data(), B, qlr);
  matvec_rows(packed, p.wq_b, qr.data(), B, Hhd, qlr, q0.data());
  s.norm_fwd(q0.data(), nullptr, qn.data(), B * H, hd);
  s.rope(qn.data(), q.data(), pos.data(), B, H, hd, +1);
  matvec_rows(packed, p.wkv, x, B, hd, d, kva.data());
  s.norm_fwd(kva.data(), p.kv_norm, kvn.data(), B, hd);
  const int64_t C = m > 0 ? kernels::compressor_width(int(m), hd) : 0;
  std::vector<float>& ckt = fit(ds.ckt, Bs * size_t(C));
  std::vector<float>& czt = fit(ds.czt, ckt.size());
  if (m > 0) {
    matvec_rows(packed, p.comp_wkv, x, B, C, d, ckt.data());
    matvec_rows(packed, p.comp_wgate, x, B, C, d, czt.data());
  }
  const int64_t IH = s.IH, Ihd = s.Ihd;
  const int64_t CI = m == 4 ? kernels::compressor_width(4, Ihd) : 0;
  std::vector<float>& ikt = fit(ds.ikt, Bs * size_t(CI));
  std::vector<float>& izt = fit(ds.izt, ikt.size());
  std::vector<float>& qIa = fit(ds.qIa, m == 4 ? Bs * size_t(IH * Ihd) : 0);
  std::vector<float>& qI = fit(ds.qI, qIa.size());
  std::vector<float>& wI = fit(ds.wI, m == 4 ? Bs * size_t(IH) : 0);
  if (m == 4) {
    matvec_rows(packed, p.idx_comp_wkv, x, B, CI, d, ikt.data());
    matvec_rows(packed, p.idx_comp_wgate, x, B, CI, d, izt.data());
    matvec_rows(packed, p.idx_wq_b, qr.data(), B, IH * Ihd, qlr, qIa.data());
    s.rope(qIa.data(), qI.data(), pos.data(), B, IH, Ihd, +1);
    matvec_rows(packed, p.idx_weights_proj, x, B, IH, d, wI.data());
  }

  // Each row against its own caches.
  std::vector<float>& oi = fit(ds.oi, Bs * size_t(Hhd));
  for (int64_t b = 0; b < B; ++b) {
    AttentionCache& cache = *caches[b];
    const int64_t t = pos[size_t(b)];
    // Key = value into the window ring.
    if (int64_t(cache.window.size()) != win * hd) cache.window.assign(static_cast<size_t>(win * hd), 0.f);
    s.rope(kvn.data() + b * hd, cache.window.data() + (t % win) * hd, &t, 1, 1, hd, +1);

    // Compressor: a new entry when this token closes a block.
    if (m > 0) {
      std::vector<float>& k0 = fit(ds.k0, size_t(hd));
      std::vector<float>& kn = fit(ds.kn, size_t(hd));
      if (compressor_push(ckt.data() + b * C, czt.data() + b * C, p.comp_ape, hd, int(m), t,
                          cache.kt, cache.zt, k0.data())) {
        const int64_t i = (t + 1) / m - 1, ipos = i * m;
        s.norm_fwd(k0.data(), p.comp_norm, kn.data(), 1, hd);
        cache.comp.resize(static_cast<size_t>((i + 1) * hd));
        s.rope(kn.data(), cache.comp.data() + i * hd, &ipos, 1, 1, hd, +1);
      }
    }
    const int64_t visible = m > 0 ? (t + 1) / m : 0;

    // Which entries the query sees.
    std::vector<int64_t>& selected = ds.selected;
    selected.clear();
    if (m == 4) {
      // The indexer's compressor takes every token, entries visible or not.
      std::vector<float>& k0 = fit(ds.k0, size_t(Ihd));
      std::vector<float>& kn = fit(ds.kn, size_t(Ihd));
      compressor_push(ikt.data() + b * CI, izt.data() + b * CI, p.idx_comp_ape, Ihd, 4, t,
                      cache.idx_kt, cache.idx_zt, k0.data());
      if (visible > 0) {
        if ((t + 1) % 4 == 0) {
          const int64_t i = (t + 1) / 4 - 1, ipos = i * 4;
          s.norm_fwd(k0.data(), p.idx_comp_norm, kn.data(), 1, Ihd);
          cache.idx_comp.resize(static_cast<size_t>((i + 1) * Ihd));
          s.rope(kn.data(), cache.idx_comp.data() + i * Ihd, &ipos, 1, 1, Ihd, +1);
        }
        const float* qIb = qI.data() + b * IH * Ihd;
        const float* w = wI.data() + b * IH;
        const float wscale = float(1.0 / std::sqrt(double(Ihd)) / std::sqrt(double(IH)));
        // Every entry's score side by side (chain_dots.h): each head's dot product one chain
        // per entry in e order, then the heads added in order, as one entry at a time.
        const size_t nv = size_t(visible);
        std::vector<float>& score = ds.score;
        score.assign(nv, 0.f);
        std::vector<float>& u = fit(ds.dotsI, nv);
        std::vector<float>& iT = ds.iT;
        std::vector<const float*>& entries = fit(ds.entries, nv);
        for (size_t i = 0; i < nv; ++i) entries[i] = cache.idx_comp.data() + i * size_t(Ihd);
        transpose_keys(entries.data(), nv, Ihd, iT);
        for (int64_t h = 0; h < IH; ++h) {
          chain_dots(qIb + h * Ihd, Ihd, iT.data(), nv, u.data());
          const float wh = w[h] * wscale;
          for (size_t i = 0; i < nv; ++i) score[i] += wh * std::max(u[i], 0.f);
        }
        selected.resize(static_cast<size_t>(visible));
        std::iota(selected.begin(), selected.end(), 0);
        // Descending score, ties to the lower index (the kernel's rule).
        std::stable_sort(selected.begin(), selected.end(),
                         [&](int64_t a, int64_t c) { return score[size_t(a)] > score[size_t(c)]; });
        selected.resize(static_cast<size_t>(std::min<int64_t>(s.top_k, visible)));
      }
    } else if (m > 0) {
      selected.resize(static_cast<size_t>(visible));
      std::iota(selected.begin(), selected.end(), 0);
    }

    // Sparse attention of the one query with its sink.
    std::vector<const float*>& keys = ds.keys;
    keys.clear();
    for (int64_t j = std::max<int64_t>(0, t - win + 1); j <= t; ++j)
      keys.push_back(cache.window.data() + (j % win) * hd);
    for (int64_t i : selected) keys.push_back(cache.comp.data() + i * hd);
    const size_t nk = keys.size();
    std::vector<float>& o = ds.o;
    o.assign(static_cast<size_t>(Hhd), 0.f);
    std::vector<float>& sc = fit(ds.sc, nk);
    std::vector<float>& kT = ds.kT;
    std::vector<float>& dots = fit(ds.dots, nk);
    // Every key's score side by side, each the same chain as one key at a time (chain_dots.h).
    transpose_keys(keys.data(), nk, hd, kT);
    const float tau = float(1.0 / std::sqrt(double(hd)));
    const float* qb = q.data() + b * Hhd;
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = qb + h * hd;
      float mx = p.attn_sink[h];
      chain_dots(qh, hd, kT.data(), nk, dots.data());
      for (size_t j = 0; j < nk; ++j) {
        sc[j] = tau * dots[j];
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
    // Inverse RoPE.
    s.rope(o.data(), oi.data() + b * Hhd, &t, 1, H, hd, -1);
    cache.len = t + 1;
  }

  // The grouped output projection over all rows: group g's slice of every row, then W_O^b.
  const int64_t gw = Hhd / s.G, Gol = s.G * s.olr;
  std::vector<float>& u = fit(ds.u, Bs * size_t(Gol));
  std::vector<float>& og = fit(ds.og, Bs * size_t(gw));
  std::vector<float>& ug = fit(ds.ug, Bs * size_t(s.olr));
  for (int64_t g = 0; g < s.G; ++g) {
    for (int64_t b = 0; b < B; ++b)
      std::copy(oi.begin() + b * Hhd + g * gw, oi.begin() + b * Hhd + (g + 1) * gw, og.begin() + b * gw);
    matvec_rows(packed, p.wo_a + g * s.olr * gw, og.data(), B, s.olr, gw, ug.data());
    for (int64_t b = 0; b < B; ++b)
      std::copy(ug.begin() + b * s.olr, ug.begin() + (b + 1) * s.olr, u.begin() + b * Gol + g * s.olr);
  }
  matvec_rows(packed, p.wo_b, u.data(), B, d, Gol, out);
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
                             AttentionCache& cache, float* out, PackedWeights* packed) {
  TREX_TRACE(kAttention, "attn.prefill");
  State& s = *s_;
  if (cache.len != 0)
    throw InputError::field("cache", "prefill needs an empty cache (it holds " +
                                         std::to_string(cache.len) + " tokens)");
  const DocSpan doc{0, T};
  s.skip_indexer_loss = true;
  s.prefill_packed = packed;
  try {
    forward(p, x, std::span<const DocSpan>(&doc, 1), T, out);
  } catch (...) {
    s.skip_indexer_loss = false;
    s.prefill_packed = nullptr;
    throw;
  }
  s.skip_indexer_loss = false;
  s.prefill_packed = nullptr;
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
