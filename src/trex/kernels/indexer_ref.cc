// Reference lightning indexer: eager chains, one fresh temporary per op.
//   scores: qf = float(qI); kf = float(kI); U = qf.view(s IH, Ihd) @ kf^T; R = relu(U);
//           Wr = R * w[..., None]; I = sum(Wr, heads); I = masked_fill(invisible, -inf)
//   top-k:  a full sort of each row by (score descending, index ascending), the first k kept,
//           slots with score -inf set to -1 (torch.topk, then a mask)
//   KL:     kg = gather(kf, idx) [s, k, Ihd]; U = bmm(qf, kg^T) [s, IH, k]; R = relu(U);
//           Wr = R * w; I = sum(Wr, heads); I = masked_fill(-inf); lq = log_softmax(I) (max,
//           subtract, exp, sum, log, subtract); q = exp(lq); pm = teacher * mask; ps = sum(pm);
//           p = pm / ps; terms = where(p > 0, p (log p - lq), 0); L = sum(terms) lambda / N;
//           dI = (q - p) lambda / N; dw = sum_i dI R; dR = dI w; dU = dR [U > 0];
//           dqI = bmm(dU, kg); dkg = bmm(dU^T, qf); dkI = index_add(dkg)
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/indexer.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::map;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t visible_entries(int64_t t, const IndexerShape& sh) {
  return std::min<int64_t>(sh.n_comp, (t + 1) / sh.ratio);
}

}  // namespace

template <class T>
void indexer_scores_ref(const T* qI, const T* kI, const float* w, float* I,
                        const IndexerShape& sh, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int64_t s = sh.s, IH = sh.heads, hd = sh.hd, nc = sh.n_comp;
  if (s <= 0 || nc <= 0) return;
  Buf oq, ok;
  const float* qf = eager::as_f32(tp, qI, s * IH * hd, oq);
  const float* kf = eager::as_f32(tp, kI, nc * hd, ok);
  Buf U = eager::fresh(s * IH * nc);
  GemmOptions go;
  go.pool = &tp;
  sgemm(Trans::kNo, Trans::kYes, s * IH, nc, hd, 1.f, qf, hd, kf, hd, 0.f, U.get(), nc, go);
  const float* up = U.get();
  Buf R = map(tp, s * IH * nc, [&](int64_t i) { return std::max(up[i], 0.f); });
  const float* rp = R.get();
  Buf Wr = map(tp, s * IH * nc, [&](int64_t i) { return rp[i] * w[i / nc]; });
  const float* wp = Wr.get();
  Buf sum = map(tp, s * nc, [&](int64_t q) {
    int64_t t = q / nc, i = q % nc;
    float a = 0.f;
    for (int64_t h = 0; h < IH; ++h) a += wp[(t * IH + h) * nc + i];
    return a;
  });
  const float* sp = sum.get();
  Buf masked = map(tp, s * nc, [&](int64_t q) {
    return q % nc < visible_entries(q / nc, sh) ? sp[q] : kNegInf;
  });
  std::copy(masked.get(), masked.get() + s * nc, I);
}

void indexer_topk_ref(const float* I, int32_t* idx, float* top, const IndexerShape& sh) {
  const int64_t nc = sh.n_comp, k = sh.top_k;
  std::vector<int32_t> order(static_cast<size_t>(nc));
  for (int64_t t = 0; t < sh.s; ++t) {
    const float* row = I + t * nc;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int64_t c = 0; c < k; ++c) {
      bool ok = c < nc && row[order[size_t(c)]] != kNegInf;
      idx[t * k + c] = ok ? order[size_t(c)] : -1;
      top[t * k + c] = ok ? row[order[size_t(c)]] : kNegInf;
    }
  }
}

template <class T>
double indexer_kl_backward_ref(const T* qI, const T* kI, const float* w, const int32_t* idx,
                               const float* teacher, float lambda, T* dqI, T* dkI, float* dw,
                               const IndexerShape& sh, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int64_t s = sh.s, IH = sh.heads, hd = sh.hd, k = sh.top_k, nc = sh.n_comp;
  Buf oq, ok;
  const float* qf = eager::as_f32(tp, qI, s * IH * hd, oq);
  const float* kf = eager::as_f32(tp, kI, nc * hd, ok);
  Buf kg = map(tp, s * k * hd, [&](int64_t i) {
    int32_t r = idx[i / hd];
    return r < 0 ? 0.f : kf[int64_t(r) * hd + i % hd];
  });
  const float* kgp = kg.get();
  Buf U = eager::fresh(s * IH * k);
  float* up = U.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t)
      sgemm(Trans::kNo, Trans::kYes, IH, k, hd, 1.f, qf + t * IH * hd, hd, kgp + t * k * hd, hd,
            0.f, up + t * IH * k, k, go);
  });
  Buf R = map(tp, s * IH * k, [&](int64_t i) { return std::max(up[i], 0.f); });
  const float* rp = R.get();
  Buf Wr = map(tp, s * IH * k, [&](int64_t i) { return rp[i] * w[i / k]; });
  const float* wrp = Wr.get();
  Buf Isum = map(tp, s * k, [&](int64_t q) {
    int64_t t = q / k, j = q % k;
    float a = 0.f;
    for (int64_t h = 0; h < IH; ++h) a += wrp[(t * IH + h) * k + j];
    return a;
  });
  const float* isp = Isum.get();
  Buf Im = map(tp, s * k, [&](int64_t q) { return idx[q] < 0 ? kNegInf : isp[q]; });
  const float* im = Im.get();
  Buf mx = map(tp, s, [&](int64_t t) {
    float m = kNegInf;
    for (int64_t j = 0; j < k; ++j) m = std::max(m, im[t * k + j]);
    return m;
  });
  const float* mxp = mx.get();
  Buf z = map(tp, s * k, [&](int64_t q) { return mxp[q / k] == kNegInf ? kNegInf : im[q] - mxp[q / k]; });
  const float* zp = z.get();
  Buf e = map(tp, s * k, [&](int64_t q) { return std::exp(zp[q]); });
  const float* ep = e.get();
  Buf den = map(tp, s, [&](int64_t t) {
    float a = 0.f;
    for (int64_t j = 0; j < k; ++j) a += ep[t * k + j];
    return a;
  });
  const float* dp = den.get();
  Buf lden = map(tp, s, [&](int64_t t) { return std::log(dp[t]); });
  const float* ldp = lden.get();
  Buf lq = map(tp, s * k, [&](int64_t q) { return zp[q] - ldp[q / k]; });
  const float* lqp = lq.get();
  Buf qv = map(tp, s * k, [&](int64_t q) { return std::exp(lqp[q]); });
  const float* qp = qv.get();
  Buf pm = map(tp, s * k, [&](int64_t q) { return idx[q] < 0 ? 0.f : teacher[q]; });
  const float* pmp = pm.get();
  Buf ps = map(tp, s, [&](int64_t t) {
    float a = 0.f;
    for (int64_t j = 0; j < k; ++j) a += pmp[t * k + j];
    return a;
  });
  const float* psp = ps.get();
  Buf p = map(tp, s * k, [&](int64_t q) { return psp[q / k] > 0.f ? pmp[q] / psp[q / k] : 0.f; });
  const float* pp = p.get();
  int64_t rows = 0;
  for (int64_t t = 0; t < s; ++t) rows += (k > 0 && idx[t * k] >= 0) ? 1 : 0;
  const float scale = rows > 0 ? lambda / float(rows) : 0.f;
  Buf terms = map(tp, s * k, [&](int64_t q) { return pp[q] > 0.f ? pp[q] * (std::log(pp[q]) - lqp[q]) : 0.f; });
  double L = 0;
  for (int64_t q = 0; q < s * k; ++q) L += double(terms[size_t(q)]);
  Buf dI = map(tp, s * k, [&](int64_t q) { return idx[q] < 0 ? 0.f : (qp[q] - pp[q]) * scale; });
  const float* dip = dI.get();
  Buf dwr = map(tp, s * IH * k, [&](int64_t i) { return dip[(i / (IH * k)) * k + i % k] * rp[i]; });
  const float* dwrp = dwr.get();
  for (int64_t r = 0; r < s * IH; ++r) {
    float a = 0.f;
    for (int64_t j = 0; j < k; ++j) a += dwrp[r * k + j];
    dw[r] = a;
  }
  Buf dR = map(tp, s * IH * k, [&](int64_t i) { return dip[(i / (IH * k)) * k + i % k] * w[i / k]; });
  const float* drp = dR.get();
  Buf dU = map(tp, s * IH * k, [&](int64_t i) { return up[i] > 0.f ? drp[i] : 0.f; });
  const float* dup = dU.get();
  Buf dq = eager::fresh(s * IH * hd), dkg = eager::fresh(s * k * hd);
  float* dqp = dq.get();
  float* dkgp = dkg.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t) {
      sgemm(Trans::kNo, Trans::kNo, IH, hd, k, 1.f, dup + t * IH * k, k, kgp + t * k * hd, hd, 0.f,
            dqp + t * IH * hd, hd, go);
      sgemm(Trans::kYes, Trans::kNo, k, hd, IH, 1.f, dup + t * IH * k, k, qf + t * IH * hd, hd,
            0.f, dkgp + t * k * hd, hd, go);
    }
  });
  eager::store_as(tp, dqp, dqI, s * IH * hd);
  std::vector<float> acc(static_cast<size_t>(nc * hd), 0.f);
  for (int64_t r = 0; r < s * k; ++r) {
    if (idx[r] < 0) continue;
    for (int64_t e = 0; e < hd; ++e) acc[size_t(int64_t(idx[r]) * hd + e)] += dkgp[r * hd + e];
  }
  eager::store_as(tp, acc.data(), dkI, nc * hd);
  return L * double(scale);
}

#define TREX_INDEXER_REF(T)                                                                       \
  template void indexer_scores_ref<T>(const T*, const T*, const float*, float*,                   \
                                      const IndexerShape&, core::ThreadPool*);                    \
  template double indexer_kl_backward_ref<T>(const T*, const T*, const float*, const int32_t*,    \
                                             const float*, float, T*, T*, float*,                 \
                                             const IndexerShape&, core::ThreadPool*);
TREX_INDEXER_REF(float)
TREX_INDEXER_REF(core::bf16)
#undef TREX_INDEXER_REF

}  // namespace trex::kernels
