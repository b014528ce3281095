// Fused limited SwiGLU: sigma(gc) is computed once per element and shared by silu, silu' and the
// product, so the forward is one pass (2 reads, 1 write) and the backward one pass (3 reads,
// 2 writes) instead of the ~10 (forward) and ~20 (backward) whole-tensor ops of the eager chain.
#include "trex/core/trace.h"
#include "trex/kernels/swiglu.h"

#include <algorithm>
#include <cmath>

#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/row_blocking.h"

namespace trex::kernels {
namespace {

using core::pool_or_default;

using simd::ld;
using simd::st;
#ifdef TREX_ELEM_AVX2
using simd::exp8;
#endif

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

#ifdef TREX_ELEM_AVX2
inline __m256 sigmoid8(__m256 z) {
  // 1 / (1 + e^-z) by the 12-bit reciprocal estimate and one Newton step (relative error about
  // 1e-7, within an ulp or two of the division), which costs a third of a division's issue slots.
  __m256 one = _mm256_set1_ps(1.f);
  __m256 x = _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), z)));
  __m256 r = _mm256_rcp_ps(x);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(x, r, _mm256_set1_ps(2.f)));
}
#endif

template <bool NT, class T>
void forward_row(const T* g, const T* u, float wr, T* out, int64_t cols, float L) {
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vL = _mm256_set1_ps(L), vnL = _mm256_set1_ps(-L), vw = _mm256_set1_ps(wr);
  for (; i + 8 <= cols; i += 8) {
    __m256 gc = _mm256_min_ps(simd::load8(g + i), vL);
    __m256 uc = _mm256_max_ps(_mm256_min_ps(simd::load8(u + i), vL), vnL);
    __m256 a = _mm256_mul_ps(_mm256_mul_ps(gc, sigmoid8(gc)), uc);
    simd::put8<NT>(out + i, _mm256_mul_ps(a, vw));
  }
#endif
  for (; i < cols; ++i) {
    float gc = std::min(ld(g + i), L), uc = std::clamp(ld(u + i), -L, L);
    st(out + i, gc * sigmoid(gc) * uc * wr);
  }
}

// Returns <dh, a> over the row (the routing-weight gradient).
template <bool NT, class T>
float backward_row(const T* g, const T* u, float wr, const T* dh, T* dg, T* du, int64_t cols,
                   float L) {
  int64_t i = 0;
  float dw = 0.f;
#ifdef TREX_ELEM_AVX2
  __m256 vL = _mm256_set1_ps(L), vnL = _mm256_set1_ps(-L), vw = _mm256_set1_ps(wr);
  __m256 one = _mm256_set1_ps(1.f), acc = _mm256_setzero_ps();
  for (; i + 8 <= cols; i += 8) {
    __m256 gv = simd::load8(g + i), uv = simd::load8(u + i), d = simd::load8(dh + i);
    __m256 gc = _mm256_min_ps(gv, vL);
    __m256 uc = _mm256_max_ps(_mm256_min_ps(uv, vL), vnL);
    __m256 s = sigmoid8(gc);
    __m256 silu = _mm256_mul_ps(gc, s);
    acc = _mm256_fmadd_ps(d, _mm256_mul_ps(silu, uc), acc);
    __m256 da = _mm256_mul_ps(d, vw);
    // silu'(gc) = s (1 + gc (1 - s)); masks as blends: the gradient passes at equality.
    __m256 dsilu = _mm256_mul_ps(s, _mm256_fmadd_ps(gc, _mm256_sub_ps(one, s), one));
    __m256 dgv = _mm256_mul_ps(_mm256_mul_ps(da, uc), dsilu);
    dgv = _mm256_and_ps(dgv, _mm256_cmp_ps(gv, vL, _CMP_LE_OQ));
    __m256 in_u =
        _mm256_and_ps(_mm256_cmp_ps(uv, vnL, _CMP_GE_OQ), _mm256_cmp_ps(uv, vL, _CMP_LE_OQ));
    __m256 duv = _mm256_and_ps(_mm256_mul_ps(da, silu), in_u);
    simd::put8<NT>(dg + i, dgv);
    simd::put8<NT>(du + i, duv);
  }
  dw = simd::hsum(acc);
#endif
  for (; i < cols; ++i) {
    float gv = ld(g + i), uv = ld(u + i), d = ld(dh + i);
    float gc = std::min(gv, L), uc = std::clamp(uv, -L, L);
    float s = sigmoid(gc), silu = gc * s;
    dw += d * silu * uc;
    float da = d * wr;
    st(dg + i, gv <= L ? da * uc * s * (1.f + gc * (1.f - s)) : 0.f);
    st(du + i, (uv >= -L && uv <= L) ? da * silu : 0.f);
  }
  return dw;
}

}  // namespace

template <class T>
void swiglu_forward(const T* g, const T* u, const float* w, T* out, int64_t rows, int64_t cols,
                    float limit, core::ThreadPool* pool) {
  if (rows <= 0 || cols <= 0) return;
  core::trace_count(0, 3.0 * double(rows * cols) * sizeof(T));  // g, u in, out
  const RowBlocking rb = row_blocking("swiglu.fwd", rows, cols);
  bool nt = simd::use_streaming<T>(rows * cols, cols, {out}, rb.stream);
  pool_or_default(pool).parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t o = r * cols;
      float wr = w ? w[r] : 1.f;
      if (nt) forward_row<true>(g + o, u + o, wr, out + o, cols, limit);
      else forward_row<false>(g + o, u + o, wr, out + o, cols, limit);
    }
    simd::fence_streams(nt);
  });
}

template <class T>
void swiglu_backward(const T* g, const T* u, const float* w, const T* dh, T* dg, T* du, float* dw,
                     int64_t rows, int64_t cols, float limit, core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::trace_count(0, 5.0 * double(rows * cols) * sizeof(T));  // g, u, dh in, dg, du out
  if (cols <= 0) {
    if (w && dw) std::fill(dw, dw + rows, 0.f);
    return;
  }
  const RowBlocking rb = row_blocking("swiglu.bwd", rows, cols);
  bool nt = simd::use_streaming<T>(rows * cols, cols, {dg, du}, rb.stream);
  pool_or_default(pool).parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t o = r * cols;
      float wr = w ? w[r] : 1.f;
      float s = nt ? backward_row<true>(g + o, u + o, wr, dh + o, dg + o, du + o, cols, limit)
                   : backward_row<false>(g + o, u + o, wr, dh + o, dg + o, du + o, cols, limit);
      if (w && dw) dw[r] = s;
    }
    simd::fence_streams(nt);
  });
}

#define TREX_INSTANTIATE(T)                                                                    \
  template void swiglu_forward<T>(const T*, const T*, const float*, T*, int64_t, int64_t,     \
                                  float, core::ThreadPool*);                                  \
  template void swiglu_backward<T>(const T*, const T*, const float*, const T*, T*, T*, float*, \
                                   int64_t, int64_t, float, core::ThreadPool*);
TREX_INSTANTIATE(float)
TREX_INSTANTIATE(core::bf16)
#undef TREX_INSTANTIATE

}  // namespace trex::kernels
