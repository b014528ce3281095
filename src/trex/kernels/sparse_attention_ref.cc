// Reference shared-KV sparse attention: the eager chain over a padded key tensor. Every query t
// gets K = window + k_comp key slots (window slot c is token t - window + 1 + c, then the
// comp_idx slots); absent slots are masked. One fresh temporary per op:
//   forward:  qf = float(q); kvf = float(kv); kcf = float(kv_comp); kg = gather -> [s, K, hd];
//             sc = bmm(qf, kg^T) [s, H, K]; sc = sc * tau; sc = where(mask, sc, -inf);
//             cat = [sc | sink] [s, H, K+1]; mx = max; z = cat - mx; e = exp(z); den = sum(e);
//             pr = e / den; lse = log(den) + mx; p = pr[..., :K]; of = bmm(p, kg); o = T(of)
//   backward: the forward up to p; dof = float(do); dp = bmm(dof, kg^T);
//             D = sum(p * dp) / sum(pr) (pr with the sink column: 1 up to rounding);
//             ds = p * (dp - D); dq = bmm(ds, kg) * tau; dkg = bmm(ds^T, qf) * tau + bmm(p^T, dof);
//             dkv = index_add(dkg window slots); dkv_comp = index_add(dkg compressed slots);
//             dsink = -sum_t (pr[..., K] * D)
// The batched matmuls are trex's sgemm per token (a BLAS call each, as bmm makes), so the
// comparison with the fused kernel measures fusion, not a slower GEMM.
// D = <do, o> is taken as sum_j p_j dp_j over the fp32 probabilities, the kernel's form
// (sparse_attention.cc), not from o: with bf16 storage o is rounded to bf16, which moved D by up
// to 2^-8 sum|do o| (dq up to 0.92 off an fp64 gradient on the tests' bf16 cases, the kernel's
// 0.18; bench/results/attn_s20/acc_bf16.log). The division by the row's probability sum, sink
// included, is the kernel's too: there it cancels lse's rounding; here it is 1 up to rounding.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/sparse_attention.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::map;

struct Padded {
  int64_t K = 0;
  std::vector<int64_t> src;  // [s, K]: row of kvf (>= 0), row n_comp.. of kcf as -(2 + i), -1 absent
  Buf qf, kg, pr, lse;       // [s,H,hd], [s,K,hd], [s,H,K+1], [s,H]
};

template <class T>
Padded eager_forward(core::ThreadPool& tp, const T* q, const T* kv, const T* kv_comp,
                     const int32_t* comp_idx, const float* sink, const SparseAttnShape& sh) {
  Padded P;
  const int64_t s = sh.s, H = sh.heads, hd = sh.hd, K = sh.window + sh.k_comp;
  P.K = K;
  P.src.assign(size_t(s * K), -1);
  for (int64_t t = 0; t < s; ++t) {
    for (int64_t c = 0; c < sh.window; ++c) {
      int64_t j = t - sh.window + 1 + c;
      if (j >= 0) P.src[size_t(t * K + c)] = j;
    }
    for (int64_t c = 0; c < sh.k_comp; ++c) {
      int32_t i = comp_idx[t * sh.k_comp + c];
      if (i >= 0) P.src[size_t(t * K + sh.window + c)] = -2 - int64_t(i);
    }
  }
  Buf own_q, own_kv, own_kc;
  const float* qf = eager::as_f32(tp, q, s * H * hd, own_q);
  P.qf = map(tp, s * H * hd, [&](int64_t i) { return qf[i]; });
  const float* kvf = eager::as_f32(tp, kv, s * hd, own_kv);
  const float* kcf = eager::as_f32(tp, kv_comp, sh.n_comp * hd, own_kc);
  const int64_t* src = P.src.data();
  P.kg = map(tp, s * K * hd, [&](int64_t i) {
    int64_t r = src[i / hd];
    if (r == -1) return 0.f;
    return r >= 0 ? kvf[r * hd + i % hd] : kcf[(-2 - r) * hd + i % hd];
  });
  const float* kg = P.kg.get();
  const float* qp = P.qf.get();
  Buf sc = eager::fresh(s * H * K);
  float* scp = sc.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t)
      sgemm(Trans::kNo, Trans::kYes, H, K, hd, 1.f, qp + t * H * hd, hd, kg + t * K * hd, hd, 0.f,
            scp + t * H * K, K, go);
  });
  const float tau = 1.f / std::sqrt(float(hd));
  Buf scaled = map(tp, s * H * K, [&](int64_t i) { return scp[i] * tau; });
  const float* scl = scaled.get();
  Buf masked = map(tp, s * H * K, [&](int64_t i) {
    int64_t t = i / (H * K), c = i % K;
    return src[t * K + c] == -1 ? -std::numeric_limits<float>::infinity() : scl[i];
  });
  const float* mk = masked.get();
  const int64_t K1 = K + 1;
  Buf cat = map(tp, s * H * K1, [&](int64_t i) {
    int64_t row = i / K1, c = i % K1;
    return c == K ? sink[row % H] : mk[row * K + c];
  });
  const float* ct = cat.get();
  Buf mx = map(tp, s * H, [&](int64_t r) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < K1; ++c) m = std::max(m, ct[r * K1 + c]);
    return m;
  });
  const float* mp = mx.get();
  Buf z = map(tp, s * H * K1, [&](int64_t i) { return ct[i] - mp[i / K1]; });
  const float* zp = z.get();
  Buf e = map(tp, s * H * K1, [&](int64_t i) { return std::exp(zp[i]); });
  const float* ep = e.get();
  Buf den = map(tp, s * H, [&](int64_t r) {
    float sum = 0.f;
    for (int64_t c = 0; c < K1; ++c) sum += ep[r * K1 + c];
    return sum;
  });
  const float* dp = den.get();
  P.pr = map(tp, s * H * K1, [&](int64_t i) { return ep[i] / dp[i / K1]; });
  P.lse = map(tp, s * H, [&](int64_t r) { return std::log(dp[r]) + mp[r]; });
  return P;
}

// p = pr[..., :K] (a slice copy) and of = bmm(p, kg).
Buf slice_probs(core::ThreadPool& tp, const Padded& P, int64_t rows) {
  const float* pr = P.pr.get();
  const int64_t K = P.K;
  return map(tp, rows * K, [&](int64_t i) { return pr[(i / K) * (K + 1) + i % K]; });
}

Buf probs_times_keys(core::ThreadPool& tp, const float* p, const float* kg,
                     const SparseAttnShape& sh, int64_t K) {
  const int64_t s = sh.s, H = sh.heads, hd = sh.hd;
  Buf of = eager::fresh(s * H * hd);
  float* op = of.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t)
      sgemm(Trans::kNo, Trans::kNo, H, hd, K, 1.f, p + t * H * K, K, kg + t * K * hd, hd, 0.f,
            op + t * H * hd, hd, go);
  });
  return of;
}

}  // namespace

template <class T>
void sparse_attention_forward_ref(const T* q, const T* kv, const T* kv_comp,
                                  const int32_t* comp_idx, const float* sink, T* o, float* lse,
                                  float* comp_prob, const SparseAttnShape& sh,
                                  core::ThreadPool* pool) {
  if (sh.s <= 0 || sh.heads <= 0 || sh.hd <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  Padded P = eager_forward(tp, q, kv, kv_comp, comp_idx, sink, sh);
  const int64_t s = sh.s, H = sh.heads, hd = sh.hd, K = P.K;
  Buf p = slice_probs(tp, P, s * H);
  Buf of = probs_times_keys(tp, p.get(), P.kg.get(), sh, K);
  eager::store_as(tp, of.get(), o, s * H * hd);
  for (int64_t i = 0; i < s * H; ++i) lse[i] = P.lse[size_t(i)];
  if (comp_prob) {
    const float* pp = p.get();
    for (int64_t t = 0; t < s; ++t)
      for (int64_t c = 0; c < sh.k_comp; ++c) {
        float sum = 0.f;
        for (int64_t h = 0; h < H; ++h) sum += pp[(t * H + h) * K + sh.window + c];
        comp_prob[t * sh.k_comp + c] = sum;
      }
  }
}

template <class T>
void sparse_attention_backward_ref(const T* q, const T* kv, const T* kv_comp,
                                   const int32_t* comp_idx, const float* sink,
                                   const float* lse, const T* d_o, T* dq, T* dkv, T* dkv_comp,
                                   float* dsink, const SparseAttnShape& sh,
                                   core::ThreadPool* pool) {
  (void)lse;  // the chain recomputes its own probabilities, as autograd replays saved ops
  const int64_t s = sh.s, H = sh.heads, hd = sh.hd;
  for (int64_t h = 0; h < H; ++h) dsink[h] = 0.f;
  if (s <= 0 || H <= 0 || hd <= 0) {
    for (int64_t i = 0; i < sh.n_comp * hd; ++i) simd::st(dkv_comp + i, 0.f);
    return;
  }
  core::ThreadPool& tp = core::pool_or_default(pool);
  Padded P = eager_forward(tp, q, kv, kv_comp, comp_idx, sink, sh);
  const int64_t K = P.K;
  Buf p = slice_probs(tp, P, s * H);
  const float* pp = p.get();
  const float* kg = P.kg.get();
  const float* qf = P.qf.get();
  Buf own_do;
  const float* dof = eager::as_f32(tp, d_o, s * H * hd, own_do);
  Buf dp = eager::fresh(s * H * K);
  float* dpp = dp.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t)
      sgemm(Trans::kNo, Trans::kYes, H, K, hd, 1.f, dof + t * H * hd, hd, kg + t * K * hd, hd,
            0.f, dpp + t * H * K, K, go);
  });
  Buf prod = map(tp, s * H * K, [&](int64_t i) { return pp[i] * dpp[i]; });
  const float* pd = prod.get();
  const float* pr = P.pr.get();
  Buf psum = map(tp, s * H, [&](int64_t r) {
    float sum = 0.f;
    for (int64_t c = 0; c <= K; ++c) sum += pr[r * (K + 1) + c];
    return sum;
  });
  const float* ps = psum.get();
  Buf D = map(tp, s * H, [&](int64_t r) {
    float sum = 0.f;
    for (int64_t c = 0; c < K; ++c) sum += pd[r * K + c];
    return sum / ps[r];
  });
  const float* Dp = D.get();
  Buf diff = map(tp, s * H * K, [&](int64_t i) { return dpp[i] - Dp[i / K]; });
  const float* df = diff.get();
  Buf ds = map(tp, s * H * K, [&](int64_t i) { return pp[i] * df[i]; });
  const float* dsp = ds.get();
  const float tau = 1.f / std::sqrt(float(hd));
  Buf dq0 = probs_times_keys(tp, dsp, kg, sh, K);
  const float* dq0p = dq0.get();
  Buf dqf = map(tp, s * H * hd, [&](int64_t i) { return dq0p[i] * tau; });
  eager::store_as(tp, dqf.get(), dq, s * H * hd);
  Buf dk1 = eager::fresh(s * K * hd), dk2 = eager::fresh(s * K * hd);
  float* a1 = dk1.get();
  float* a2 = dk2.get();
  tp.parallel_for(0, s, 1, [&](int64_t t0, int64_t t1) {
    GemmOptions go;
    go.pool = &tp;
    for (int64_t t = t0; t < t1; ++t) {
      sgemm(Trans::kYes, Trans::kNo, K, hd, H, 1.f, dsp + t * H * K, K, qf + t * H * hd, hd, 0.f,
            a1 + t * K * hd, hd, go);
      sgemm(Trans::kYes, Trans::kNo, K, hd, H, 1.f, pp + t * H * K, K, dof + t * H * hd, hd, 0.f,
            a2 + t * K * hd, hd, go);
    }
  });
  Buf dk1s = map(tp, s * K * hd, [&](int64_t i) { return a1[i] * tau; });
  const float* b1 = dk1s.get();
  Buf dkg = map(tp, s * K * hd, [&](int64_t i) { return b1[i] + a2[i]; });
  const float* g = dkg.get();
  // index_add into zero-filled fp32 tensors, then the casts.
  std::vector<float> acc_kv(size_t(s * hd), 0.f), acc_comp(size_t(sh.n_comp * hd), 0.f);
  for (int64_t r = 0; r < s * K; ++r) {
    int64_t sr = P.src[size_t(r)];
    if (sr == -1) continue;
    float* dst = sr >= 0 ? acc_kv.data() + sr * hd : acc_comp.data() + (-2 - sr) * hd;
    for (int64_t e = 0; e < hd; ++e) dst[e] += g[r * hd + e];
  }
  eager::store_as(tp, acc_kv.data(), dkv, s * hd);
  eager::store_as(tp, acc_comp.data(), dkv_comp, sh.n_comp * hd);
  for (int64_t r = 0; r < s * H; ++r) dsink[r % H] -= pr[r * (K + 1) + K] * Dp[r];
}

#define TREX_SPARSE_ATTN_REF(T)                                                                  \
  template void sparse_attention_forward_ref<T>(const T*, const T*, const T*, const int32_t*,    \
                                                const float*, T*, float*, float*,                \
                                                const SparseAttnShape&, core::ThreadPool*);      \
  template void sparse_attention_backward_ref<T>(const T*, const T*, const T*, const int32_t*,   \
                                                 const float*, const float*, const T*, T*, T*,   \
                                                 T*, float*,                                     \
                                                 const SparseAttnShape&, core::ThreadPool*);
TREX_SPARSE_ATTN_REF(float)
TREX_SPARSE_ATTN_REF(core::bf16)
#undef TREX_SPARSE_ATTN_REF

}  // namespace trex::kernels
