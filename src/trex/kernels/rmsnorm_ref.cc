// Reference RMSNorm: the op-by-op chain an eager framework runs, one fresh temporary per op
// (uninitialised, like torch.empty, so first-touch page faults are part of the cost as they are
// in eager mode). Each op is itself parallel over elements or rows, so the comparison with the
// fused kernel measures fusion, not threading. The chains (x [rows, dim], w [dim]):
//   forward:  xf = float(x); sq = xf*xf; ms = mean(sq, -1); ms = ms + eps; r = rsqrt(ms);
//             xh = xf * r[:, None]; y = xh * w; out = T(y)
//   backward: xf, dyf = float(...); gw = dyf * w; sq, ms, +eps, r as above; xh = xf * r;
//             p = gw * xh; m = mean(p, -1); t = xh * m[:, None]; d = gw - t; dx = d * r[:, None];
//             q = dyf * xh; dw = sum(q, 0)
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/eager_chain.h"
#include "trex/kernels/elementwise_simd.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::as_f32;
using eager::fresh;
using eager::map;
using eager::store_as;
using core::pool_or_default;

// mean over the last dim of a [rows, dim] tensor -> [rows].
Buf row_mean(core::ThreadPool& tp, const float* a, int64_t rows, int64_t dim) {
  Buf out = fresh(rows);
  float* o = out.get();
  tp.parallel_for(0, rows, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float s = 0.f;
      for (int64_t j = 0; j < dim; ++j) s += a[r * dim + j];
      o[r] = s / float(dim);
    }
  });
  return out;
}

// r = rsqrt(mean(xf * xf, -1) + eps), op by op.
Buf inv_rms(core::ThreadPool& tp, const float* xf, int64_t rows, int64_t dim, float eps) {
  int64_t n = rows * dim;
  Buf sq = map(tp, n, [&](int64_t i) { return xf[i] * xf[i]; });
  Buf ms = row_mean(tp, sq.get(), rows, dim);
  const float* m = ms.get();
  Buf mse = map(tp, rows, [&](int64_t i) { return m[i] + eps; });
  const float* e = mse.get();
  return map(tp, rows, [&](int64_t i) { return 1.f / std::sqrt(e[i]); });
}

}  // namespace

template <class T>
void rmsnorm_forward_ref(const T* x, const float* w, T* y, int64_t rows, int64_t dim, float eps,
                         core::ThreadPool* pool) {
  if (rows <= 0 || dim <= 0) return;
  core::ThreadPool& tp = pool_or_default(pool);
  int64_t n = rows * dim;
  Buf xo;
  const float* xf = as_f32(tp, x, n, xo);
  Buf r = inv_rms(tp, xf, rows, dim, eps);
  const float* rp = r.get();
  Buf xh = map(tp, n, [&](int64_t i) { return xf[i] * rp[i / dim]; });
  const float* xhp = xh.get();
  if (w) {
    Buf yw = map(tp, n, [&](int64_t i) { return xhp[i] * w[i % dim]; });
    store_as(tp, yw.get(), y, n);
  } else {
    store_as(tp, xhp, y, n);
  }
}

template <class T>
void rmsnorm_backward_ref(const T* x, const float* w, const T* dy, T* dx, float* dw, int64_t rows,
                          int64_t dim, float eps, core::ThreadPool* pool) {
  if (dim <= 0) return;
  core::ThreadPool& tp = pool_or_default(pool);
  if (rows <= 0) {
    if (w && dw) std::fill(dw, dw + dim, 0.f);
    return;
  }
  int64_t n = rows * dim;
  Buf xo, dyo, gwo;
  const float* xf = as_f32(tp, x, n, xo);
  const float* dyf = as_f32(tp, dy, n, dyo);
  const float* gw = dyf;
  if (w) {
    gwo = map(tp, n, [&](int64_t i) { return dyf[i] * w[i % dim]; });
    gw = gwo.get();
  }
  Buf r = inv_rms(tp, xf, rows, dim, eps);
  const float* rp = r.get();
  Buf xh = map(tp, n, [&](int64_t i) { return xf[i] * rp[i / dim]; });
  const float* xhp = xh.get();
  Buf p = map(tp, n, [&](int64_t i) { return gw[i] * xhp[i]; });
  Buf m = row_mean(tp, p.get(), rows, dim);
  const float* mp = m.get();
  Buf t = map(tp, n, [&](int64_t i) { return xhp[i] * mp[i / dim]; });
  const float* tp_ = t.get();
  Buf d = map(tp, n, [&](int64_t i) { return gw[i] - tp_[i]; });
  const float* dp = d.get();
  Buf dxf = map(tp, n, [&](int64_t i) { return dp[i] * rp[i / dim]; });
  store_as(tp, dxf.get(), dx, n);
  if (w && dw) {
    Buf q = map(tp, n, [&](int64_t i) { return dyf[i] * xhp[i]; });
    const float* qp = q.get();
    // sum over rows, in row order for each column (parallel over columns: deterministic).
    tp.parallel_for(0, dim, 256, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) dw[j] = 0.f;
      for (int64_t r0 = 0; r0 < rows; ++r0)
        for (int64_t j = j0; j < j1; ++j) dw[j] += qp[r0 * dim + j];
    });
  }
}

#define TREX_INSTANTIATE(T)                                                                    \
  template void rmsnorm_forward_ref<T>(const T*, const float*, T*, int64_t, int64_t, float,   \
                                       core::ThreadPool*);                                    \
  template void rmsnorm_backward_ref<T>(const T*, const float*, const T*, T*, float*, int64_t, \
                                        int64_t, float, core::ThreadPool*);
TREX_INSTANTIATE(float)
TREX_INSTANTIATE(core::bf16)
#undef TREX_INSTANTIATE

}  // namespace trex::kernels
