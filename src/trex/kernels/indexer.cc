// Fused lightning indexer. Scores: per block of 8 tokens, one GEMM of their IH query heads
// against the entries visible to the block's last token, then ReLU and the head-weighted sum
// on each row while it is in cache; the selection runs on that row directly. KL gradient: per
// token, the selected keys are gathered once and U, dqI and dkI are three small GEMMs.
#include "trex/kernels/indexer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/gemm.h"

namespace trex::kernels {
namespace {

using simd::ld;
using simd::st;

constexpr int64_t kTokenBlock = 8;

int64_t visible(int64_t t, const IndexerShape& sh) {
  return std::min<int64_t>(sh.n_comp, (t + 1) / sh.ratio);
}

template <class T>
std::vector<float> to_f32(const T* x, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = ld(x + i);
  return out;
}

// Rows t0..t1-1 of the scores into rows[(t - t0) * ldr + i] for i < v_t (the rest is not written).
// U is scratch for (t1 - t0) IH x v floats; qbuf for the block's queries widened to fp32 (bf16
// storage only: the queries are widened a block at a time, never as a whole tensor).
template <class T>
void score_block(const T* q, const float* kf, const float* w, const IndexerShape& sh, int64_t t0,
                 int64_t t1, std::vector<float>& U, std::vector<float>& qbuf, float* rows,
                 int64_t ldr, core::ThreadPool& tp) {
  const int64_t IH = sh.heads, hd = sh.hd, v = visible(t1 - 1, sh);
  if (v <= 0) return;
  const float* qf = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    qf = q + t0 * IH * hd;
  } else {
    const int64_t n = (t1 - t0) * IH * hd;
    qbuf.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) qbuf[size_t(i)] = ld(q + t0 * IH * hd + i);
    qf = qbuf.data();
  }
  U.resize(size_t((t1 - t0) * IH * v));
  GemmOptions go;
  go.pool = &tp;  // inside a pool job: runs on this thread
  sgemm(Trans::kNo, Trans::kYes, (t1 - t0) * IH, v, hd, 1.f, qf, hd, kf, hd, 0.f, U.data(), v, go);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t vt = visible(t, sh);
    float* r = rows + (t - t0) * ldr;
    std::fill(r, r + vt, 0.f);
    for (int64_t h = 0; h < IH; ++h) {
      const float wh = w[t * IH + h];
      const float* u = U.data() + ((t - t0) * IH + h) * v;
      for (int64_t i = 0; i < vt; ++i) r[i] += wh * std::max(u[i], 0.f);
    }
  }
}

void select_row(const float* row, int64_t v, int64_t k, int32_t* idx, float* top,
                std::vector<int32_t>& order) {
  order.resize(size_t(v));
  std::iota(order.begin(), order.end(), 0);
  auto before = [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
  const int64_t take = std::min(k, v);
  if (take < v) std::nth_element(order.begin(), order.begin() + take, order.end(), before);
  std::sort(order.begin(), order.begin() + take, before);
  for (int64_t c = 0; c < k; ++c) {
    idx[c] = c < take ? order[size_t(c)] : -1;
    top[c] = c < take ? row[order[size_t(c)]] : -std::numeric_limits<float>::infinity();
  }
}

// The keys as fp32 (a view for fp32 storage, a widened copy of the n_comp x Ihd block for bf16).
template <class T>
struct F32Keys {
  std::vector<float> buf;
  const float* k = nullptr;
  F32Keys(const T* kI, const IndexerShape& sh) {
    if constexpr (std::is_same_v<T, float>) {
      k = kI;
    } else {
      buf = to_f32(kI, sh.n_comp * sh.hd);
      k = buf.data();
    }
  }
};

}  // namespace

template <class T>
void indexer_scores(const T* qI, const T* kI, const float* w, float* I, const IndexerShape& sh,
                    core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  F32Keys<T> keys(kI, sh);
  const int64_t blocks = (sh.s + kTokenBlock - 1) / kTokenBlock;
  tp.parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> U, qbuf;
    for (int64_t b = b0; b < b1; ++b) {
      int64_t t0 = b * kTokenBlock, t1 = std::min(sh.s, t0 + kTokenBlock);
      score_block(qI, keys.k, w, sh, t0, t1, U, qbuf, I + t0 * sh.n_comp, sh.n_comp, tp);
      for (int64_t t = t0; t < t1; ++t)
        std::fill(I + t * sh.n_comp + visible(t, sh), I + (t + 1) * sh.n_comp,
                  -std::numeric_limits<float>::infinity());
    }
  });
}

void indexer_topk(const float* I, int32_t* idx, float* top, const IndexerShape& sh,
                  core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  tp.parallel_for(0, sh.s, 16, [&](int64_t t0, int64_t t1) {
    std::vector<int32_t> order;
    for (int64_t t = t0; t < t1; ++t)
      select_row(I + t * sh.n_comp, visible(t, sh), sh.top_k, idx + t * sh.top_k,
                 top + t * sh.top_k, order);
  });
}

template <class T>
void indexer_select(const T* qI, const T* kI, const float* w, int32_t* idx, float* top,
                    const IndexerShape& sh, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  F32Keys<T> keys(kI, sh);
  const int64_t blocks = (sh.s + kTokenBlock - 1) / kTokenBlock;
  tp.parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> U, qbuf, rows(static_cast<size_t>(kTokenBlock * std::max<int64_t>(sh.n_comp, 1)));
    std::vector<int32_t> order;
    for (int64_t b = b0; b < b1; ++b) {
      int64_t t0 = b * kTokenBlock, t1 = std::min(sh.s, t0 + kTokenBlock);
      score_block(qI, keys.k, w, sh, t0, t1, U, qbuf, rows.data(), sh.n_comp, tp);
      for (int64_t t = t0; t < t1; ++t)
        select_row(rows.data() + (t - t0) * sh.n_comp, visible(t, sh), sh.top_k,
                   idx + t * sh.top_k, top + t * sh.top_k, order);
    }
  });
}

namespace {

struct KlPlan {
  int64_t chunks = 0, len = 0, per_chunk = 0;  // per chunk: dkI partial, then row losses
};
KlPlan kl_plan(const IndexerShape& sh) {
  KlPlan p;
  p.chunks = std::min<int64_t>(16, std::max<int64_t>(1, sh.s));
  p.len = (sh.s + p.chunks - 1) / p.chunks;
  p.chunks = sh.s > 0 ? (sh.s + p.len - 1) / p.len : 0;
  p.per_chunk = sh.n_comp * sh.hd + p.len;
  return p;
}

}  // namespace

int64_t indexer_kl_workspace(const IndexerShape& sh) {
  KlPlan p = kl_plan(sh);
  return p.chunks * p.per_chunk;
}

template <class T>
double indexer_kl_backward(const T* qI, const T* kI, const float* w, const int32_t* idx,
                           const float* teacher, float lambda, T* dqI, T* dkI, float* dw,
                           const IndexerShape& sh, float* workspace, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int64_t IH = sh.heads, hd = sh.hd, k = sh.top_k;
  KlPlan plan = kl_plan(sh);
  std::vector<float> owned;
  if (!workspace) {
    owned.resize(size_t(plan.chunks * plan.per_chunk));
    workspace = owned.data();
  }
  int64_t rows = 0;
  for (int64_t t = 0; t < sh.s; ++t) rows += (k > 0 && idx[t * k] >= 0) ? 1 : 0;
  const float scale = rows > 0 ? lambda / float(rows) : 0.f;
  tp.parallel_for(0, plan.chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> Q(static_cast<size_t>(IH * hd)), Kg(static_cast<size_t>(k * hd)), U(static_cast<size_t>(IH * k)), dU(static_cast<size_t>(IH * k));
    std::vector<float> dQ(static_cast<size_t>(IH * hd)), dK(static_cast<size_t>(k * hd)), I(static_cast<size_t>(k)), qv(static_cast<size_t>(k)), pv(static_cast<size_t>(k));
    GemmOptions go;
    go.pool = &tp;
    for (int64_t c = c0; c < c1; ++c) {
      float* dk_acc = workspace + c * plan.per_chunk;
      float* row_loss = dk_acc + sh.n_comp * hd;
      std::fill(dk_acc, dk_acc + plan.per_chunk, 0.f);
      const int64_t tlo = c * plan.len, thi = std::min(sh.s, tlo + plan.len);
      for (int64_t t = tlo; t < thi; ++t) {
        int64_t n = 0;
        while (n < k && idx[t * k + n] >= 0) ++n;
        float* dwt = dw + t * IH;
        if (n == 0) {
          std::fill(dwt, dwt + IH, 0.f);
          for (int64_t e = 0; e < IH * hd; ++e) st(dqI + t * IH * hd + e, 0.f);
          continue;
        }
        for (int64_t e = 0; e < IH * hd; ++e) Q[size_t(e)] = ld(qI + t * IH * hd + e);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t e = 0; e < hd; ++e) Kg[size_t(j * hd + e)] = ld(kI + idx[t * k + j] * hd + e);
        sgemm(Trans::kNo, Trans::kYes, IH, n, hd, 1.f, Q.data(), hd, Kg.data(), hd, 0.f, U.data(),
              n, go);
        const float* wt = w + t * IH;
        float mx = -std::numeric_limits<float>::infinity(), tsum = 0.f;
        for (int64_t j = 0; j < n; ++j) {
          float s = 0.f;
          for (int64_t h = 0; h < IH; ++h) s += wt[h] * std::max(U[size_t(h * n + j)], 0.f);
          I[size_t(j)] = s;
          mx = std::max(mx, s);
          tsum += teacher[t * k + j];
        }
        float z = 0.f;
        for (int64_t j = 0; j < n; ++j) z += std::exp(I[size_t(j)] - mx);
        const float lz = std::log(z);
        float loss = 0.f;
        for (int64_t j = 0; j < n; ++j) {
          float lq = I[size_t(j)] - mx - lz;
          float p = tsum > 0.f ? teacher[t * k + j] / tsum : 0.f;
          qv[size_t(j)] = std::exp(lq);
          pv[size_t(j)] = p;
          if (p > 0.f) loss += p * (std::log(p) - lq);
        }
        row_loss[t - tlo] = loss;
        std::fill(dwt, dwt + IH, 0.f);
        for (int64_t h = 0; h < IH; ++h)
          for (int64_t j = 0; j < n; ++j) {
            float dI = scale * (qv[size_t(j)] - pv[size_t(j)]);
            float u = U[size_t(h * n + j)];
            dwt[h] += dI * std::max(u, 0.f);
            dU[size_t(h * n + j)] = u > 0.f ? dI * wt[h] : 0.f;
          }
        sgemm(Trans::kNo, Trans::kNo, IH, hd, n, 1.f, dU.data(), n, Kg.data(), hd, 0.f, dQ.data(),
              hd, go);
        for (int64_t e = 0; e < IH * hd; ++e) st(dqI + t * IH * hd + e, dQ[size_t(e)]);
        sgemm(Trans::kYes, Trans::kNo, n, hd, IH, 1.f, dU.data(), n, Q.data(), hd, 0.f, dK.data(),
              hd, go);
        for (int64_t j = 0; j < n; ++j) {
          float* dst = dk_acc + idx[t * k + j] * hd;
          for (int64_t e = 0; e < hd; ++e) dst[e] += dK[size_t(j * hd + e)];
        }
      }
    }
  });
  tp.parallel_for(0, sh.n_comp, 16, [&](int64_t i0, int64_t i1) {
    std::vector<float> acc(static_cast<size_t>(hd));
    for (int64_t i = i0; i < i1; ++i) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t c = 0; c < plan.chunks; ++c) {
        const float* src = workspace + c * plan.per_chunk + i * hd;
        for (int64_t e = 0; e < hd; ++e) acc[size_t(e)] += src[e];
      }
      for (int64_t e = 0; e < hd; ++e) st(dkI + i * hd + e, acc[size_t(e)]);
    }
  });
  double total = 0;
  for (int64_t t = 0; t < sh.s; ++t) {
    if (k == 0 || idx[t * k] < 0) continue;
    int64_t c = t / plan.len;
    total += double(workspace[c * plan.per_chunk + sh.n_comp * hd + (t - c * plan.len)]);
  }
  return total * double(scale);
}

#define TREX_INDEXER(T)                                                                         \
  template void indexer_scores<T>(const T*, const T*, const float*, float*, const IndexerShape&, \
                                  core::ThreadPool*);                                           \
  template void indexer_select<T>(const T*, const T*, const float*, int32_t*, float*,           \
                                  const IndexerShape&, core::ThreadPool*);                      \
  template double indexer_kl_backward<T>(const T*, const T*, const float*, const int32_t*,      \
                                         const float*, float, T*, T*, float*,                   \
                                         const IndexerShape&, float*, core::ThreadPool*);
TREX_INDEXER(float)
TREX_INDEXER(core::bf16)
#undef TREX_INDEXER

}  // namespace trex::kernels
