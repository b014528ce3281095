// Reference limited SwiGLU: the op-by-op chain of an eager framework (and of its autograd), one
// fresh, uninitialised temporary per op; each op is parallel over elements or rows so that the
// comparison with the fused kernel measures fusion, not threading. ([rows, cols]; w [rows])
//   forward:  gf, uf = float(g, u); gc = clamp_max(gf, L); uc = clamp(uf, -L, L);
//             sg = sigmoid(gc); si = gc * sg; a = si * uc; h = a * w[:, None]; out = T(h)
//   backward: recompute gc, uc, sg, si, a; dhf = float(dh); da = dhf * w[:, None];
//             q = dhf * a; dw = sum(q, -1); t = da * uc; om = 1 - sg; z = gc * om; z1 = z + 1;
//             ds = sg * z1; dgc = t * ds; mg = g <= L; dg = dgc * mg; dsi = da * si;
//             mu = (u >= -L) & (u <= L); du = dsi * mu
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/swiglu.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::as_f32;
using eager::fresh;
using eager::map;
using eager::store_as;
using core::pool_or_default;

// The forward intermediates the backward recomputes (eager autograd would have saved them).
struct Fwd {
  Buf gc, uc, sg, si, a;
};

Fwd forward_chain(core::ThreadPool& tp, const float* gf, const float* uf, int64_t n, float L) {
  Fwd f;
  f.gc = map(tp, n, [&](int64_t i) { return std::min(gf[i], L); });
  f.uc = map(tp, n, [&](int64_t i) { return std::clamp(uf[i], -L, L); });
  const float* gc = f.gc.get();
  f.sg = map(tp, n, [&](int64_t i) { return 1.f / (1.f + std::exp(-gc[i])); });
  const float* sg = f.sg.get();
  f.si = map(tp, n, [&](int64_t i) { return gc[i] * sg[i]; });
  const float *si = f.si.get(), *uc = f.uc.get();
  f.a = map(tp, n, [&](int64_t i) { return si[i] * uc[i]; });
  return f;
}

}  // namespace

template <class T>
void swiglu_forward_ref(const T* g, const T* u, const float* w, T* out, int64_t rows,
                        int64_t cols, float limit, core::ThreadPool* pool) {
  if (rows <= 0 || cols <= 0) return;
  core::ThreadPool& tp = pool_or_default(pool);
  int64_t n = rows * cols;
  Buf go, uo;
  const float* gf = as_f32(tp, g, n, go);
  const float* uf = as_f32(tp, u, n, uo);
  Fwd f = forward_chain(tp, gf, uf, n, limit);
  const float* a = f.a.get();
  if (w) {
    Buf h = map(tp, n, [&](int64_t i) { return a[i] * w[i / cols]; });
    store_as(tp, h.get(), out, n);
  } else {
    store_as(tp, a, out, n);
  }
}

template <class T>
void swiglu_backward_ref(const T* g, const T* u, const float* w, const T* dh, T* dg, T* du,
                         float* dw, int64_t rows, int64_t cols, float limit,
                         core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::ThreadPool& tp = pool_or_default(pool);
  if (cols <= 0) {
    if (w && dw) std::fill(dw, dw + rows, 0.f);
    return;
  }
  int64_t n = rows * cols;
  float L = limit;
  Buf go, uo, dho, dao;
  const float* gf = as_f32(tp, g, n, go);
  const float* uf = as_f32(tp, u, n, uo);
  const float* dhf = as_f32(tp, dh, n, dho);
  Fwd f = forward_chain(tp, gf, uf, n, L);
  const float *gc = f.gc.get(), *uc = f.uc.get(), *sg = f.sg.get(), *si = f.si.get();
  const float* a = f.a.get();
  const float* da = dhf;
  if (w) {
    dao = map(tp, n, [&](int64_t i) { return dhf[i] * w[i / cols]; });
    da = dao.get();
    Buf q = map(tp, n, [&](int64_t i) { return dhf[i] * a[i]; });
    const float* qp = q.get();
    if (dw)
      tp.parallel_for(0, rows, 16, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          float s = 0.f;
          for (int64_t j = 0; j < cols; ++j) s += qp[r * cols + j];
          dw[r] = s;
        }
      });
  }
  Buf t = map(tp, n, [&](int64_t i) { return da[i] * uc[i]; });
  Buf om = map(tp, n, [&](int64_t i) { return 1.f - sg[i]; });
  const float* omp = om.get();
  Buf z = map(tp, n, [&](int64_t i) { return gc[i] * omp[i]; });
  const float* zp = z.get();
  Buf z1 = map(tp, n, [&](int64_t i) { return zp[i] + 1.f; });
  const float* z1p = z1.get();
  Buf ds = map(tp, n, [&](int64_t i) { return sg[i] * z1p[i]; });
  const float *tp_ = t.get(), *dsp = ds.get();
  Buf dgc = map(tp, n, [&](int64_t i) { return tp_[i] * dsp[i]; });
  Buf mg = map(tp, n, [&](int64_t i) { return gf[i] <= L ? 1.f : 0.f; });
  const float *dgcp = dgc.get(), *mgp = mg.get();
  // A multiply by a 0/1 mask, as eager code does: 0 * inf would be NaN, but inputs are finite.
  Buf dgf = map(tp, n, [&](int64_t i) { return dgcp[i] * mgp[i]; });
  store_as(tp, dgf.get(), dg, n);
  Buf dsi = map(tp, n, [&](int64_t i) { return da[i] * si[i]; });
  Buf mu = map(tp, n, [&](int64_t i) { return (uf[i] >= -L && uf[i] <= L) ? 1.f : 0.f; });
  const float *dsip = dsi.get(), *mup = mu.get();
  Buf duf = map(tp, n, [&](int64_t i) { return dsip[i] * mup[i]; });
  store_as(tp, duf.get(), du, n);
}

#define TREX_INSTANTIATE(T)                                                                    \
  template void swiglu_forward_ref<T>(const T*, const T*, const float*, T*, int64_t, int64_t, \
                                      float, core::ThreadPool*);                              \
  template void swiglu_backward_ref<T>(const T*, const T*, const float*, const T*, T*, T*,    \
                                       float*, int64_t, int64_t, float, core::ThreadPool*);
TREX_INSTANTIATE(float)
TREX_INSTANTIATE(core::bf16)
#undef TREX_INSTANTIATE

}  // namespace trex::kernels
