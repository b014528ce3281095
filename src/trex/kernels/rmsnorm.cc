// Fused RMSNorm: one pass over a row to get sum(x^2) (and sum(w dy x) in the backward), a second
// pass over the same row, still in L1/L2, to write the output. Memory traffic is the minimum:
// forward reads x and writes y, backward reads x and dy and writes dx (plus dw partials).
// bf16 rows run on 16 lanes where the CPU has AVX-512 (row_isa()), with stores by vcvtneps2bf16
// where it has AVX512_BF16: on 8 lanes they were bound by instructions (a widening of 2 and a
// rounding of ~10 per 8 elements), not by memory. The backward's fp32 rows stay on 8 lanes
// (memory-bound there; 16 lanes measured no gain). The forward on AVX-512 (fp32 and bf16) runs
// each row's output pass in the loop of the next row's sum of squares (forward_rows512): that
// sum is one chain of dependent FMAs, bound by their latency, so the two passes overlap. (The
// same for the backward's two 8-lane sums measured slower for bf16: not done.) The 16-lane
// rows keep the 8-lane rows' bits: the same sums in the same order, the same element-wise
// operations (tested).
#include "trex/core/trace.h"
#include "trex/kernels/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/row_blocking.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using core::pool_or_default;

using simd::ld;
using simd::st;

// Rows per dw partial: fixed (never derived from the thread count) so dw is deterministic.
constexpr int64_t kDwChunkRows = 64;

// sum(x^2) of one row [dim]: two accumulators to hide the FMA latency.
template <class T>
float sum_sq(const T* x, int64_t dim) {
  int64_t i = 0;
  float s = 0.f;
#ifdef TREX_ELEM_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (; i + 16 <= dim; i += 16) {
    __m256 v0 = simd::load8(x + i), v1 = simd::load8(x + i + 8);
    a0 = _mm256_fmadd_ps(v0, v0, a0);
    a1 = _mm256_fmadd_ps(v1, v1, a1);
  }
  for (; i + 8 <= dim; i += 8) {
    __m256 v = simd::load8(x + i);
    a0 = _mm256_fmadd_ps(v, v, a0);
  }
  s = simd::hsum(_mm256_add_ps(a0, a1));
#endif
  for (; i < dim; ++i) s += ld(x + i) * ld(x + i);
  return s;
}

template <bool NT, class T>
void forward_row(const T* x, const float* w, T* y, int64_t dim, float eps) {
  // Exact 1/sqrt (not the 12-bit rsqrt estimate): once per row, it costs nothing.
  float r = 1.f / std::sqrt(sum_sq(x, dim) / float(dim) + eps);
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vr = _mm256_set1_ps(r);
  if (w) {
    for (; i + 8 <= dim; i += 8)
      simd::put8<NT>(y + i, _mm256_mul_ps(_mm256_mul_ps(simd::load8(x + i), vr),
                                          _mm256_loadu_ps(w + i)));
  } else {
    for (; i + 8 <= dim; i += 8) simd::put8<NT>(y + i, _mm256_mul_ps(simd::load8(x + i), vr));
  }
#endif
  for (; i < dim; ++i) st(y + i, w ? ld(x + i) * r * w[i] : ld(x + i) * r);
}

// One row of the backward. dx = r gw - (r^3 sum(gw x) / dim) x, with gw = w dy; this is
// r (gw - xh mean(gw xh)) with xh = r x expanded. dwp (may be null) += dy * x * r.
template <bool NT, class T>
void backward_row(const T* x, const float* w, const T* dy, T* dx, float* dwp, int64_t dim,
                  float eps) {
  int64_t i = 0;
  float ss = 0.f, sd = 0.f;
#ifdef TREX_ELEM_AVX2
  __m256 as = _mm256_setzero_ps(), ad = _mm256_setzero_ps();
  for (; i + 8 <= dim; i += 8) {
    __m256 v = simd::load8(x + i), g = simd::load8(dy + i);
    if (w) g = _mm256_mul_ps(g, _mm256_loadu_ps(w + i));
    as = _mm256_fmadd_ps(v, v, as);
    ad = _mm256_fmadd_ps(g, v, ad);
  }
  ss = simd::hsum(as);
  sd = simd::hsum(ad);
#endif
  for (; i < dim; ++i) {
    float v = ld(x + i), g = ld(dy + i) * (w ? w[i] : 1.f);
    ss += v * v;
    sd += g * v;
  }
  float r = 1.f / std::sqrt(ss / float(dim) + eps);
  float c = r * r * r * sd / float(dim);
  i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vr = _mm256_set1_ps(r), vc = _mm256_set1_ps(c);
  for (; i + 8 <= dim; i += 8) {
    __m256 v = simd::load8(x + i), d = simd::load8(dy + i);
    __m256 g = w ? _mm256_mul_ps(d, _mm256_loadu_ps(w + i)) : d;
    simd::put8<NT>(dx + i, _mm256_fnmadd_ps(vc, v, _mm256_mul_ps(vr, g)));
    if (dwp)
      _mm256_storeu_ps(dwp + i, _mm256_fmadd_ps(_mm256_mul_ps(d, v), vr, _mm256_loadu_ps(dwp + i)));
  }
#endif
  for (; i < dim; ++i) {
    float v = ld(x + i), d = ld(dy + i), g = d * (w ? w[i] : 1.f);
    st(dx + i, r * g - c * v);
    if (dwp) dwp[i] += d * v * r;
  }
}

// The rows above on 16 lanes (AVX-512). Only the vector parts change; each row's last
// dim % 8 elements take the scalar code of the 8-lane rows, so a row has the same bits on either
// path whatever its length. (They use the 8-lane helpers too: only in builds that have those.)
#ifdef TREX_ELEM_AVX2
#define TREX_RMS512_FN \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16")))

// A bf16 store through vcvtneps2bf16 where the CPU has AVX512_BF16 (Cvt; same bits, see
// round16_cvt), else put16.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN inline void out16(T* p, __m512 v, __mmask16 m) {
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(p, v, m);
  else simd::put16<NT>(p, v, m);
}

// sum_sq on 16 lanes: lanes 0-7 are sum_sq's a0 and lanes 8-15 its a1 (a 16-element step adds
// x[i..i+7] to a0 and x[i+8..i+15] to a1 there), a last 8-element step adds to a0 alone, and
// hsum16 adds a0 + a1 before hsum's order: the same sums in the same order. bf16 takes a line
// per step first (scale_line32's comment), the same sums in the same order.
template <class T>
TREX_RMS512_FN float sum_sq512(const T* x, int64_t dim) {
  __m512 a = _mm512_setzero_ps();
  int64_t i = 0;
  if constexpr (std::is_same_v<T, core::bf16>) {  // a line per step (scale_line32's comment)
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    for (; i + 32 <= dim; i += 32) {
      __m512 v0, v1;
      simd::load32(x + i, lo_idx, hi_idx, &v0, &v1);
      a = _mm512_fmadd_ps(v0, v0, a);
      a = _mm512_fmadd_ps(v1, v1, a);
    }
  }
  for (; i + 16 <= dim; i += 16) {
    const __m512 v = simd::load16(x + i, simd::kAll16);
    a = _mm512_fmadd_ps(v, v, a);
  }
  if (i + 8 <= dim) {
    const __m512 v = simd::load16(x + i, 0xff);
    a = _mm512_mask3_fmadd_ps(v, v, a, 0xff);
    i += 8;
  }
  float s = simd::hsum16(a);
  for (; i < dim; ++i) s += ld(x + i) * ld(x + i);
  return s;
}

// bf16 rows on AVX512_BF16 take a line (32 elements) per step: one 64-byte load widened by two
// word permutes (simd::load32) instead of two loads widened in two instructions each, and one
// vcvtne2ps2bf16 for the line's store (simd::store32) instead of a rounding and a denormal test
// per half. Lanes 0-15 and 16-31 are the two 16-lane steps' values, summed into the one
// accumulator in the same order: the same bits. scale_line32: a line's output step, y = x r w.
template <bool NT>
TREX_RMS512_FN void scale_line32(__m512 v0, __m512 v1, __m512 vr, const float* w, core::bf16* y) {
  v0 = _mm512_mul_ps(v0, vr);
  v1 = _mm512_mul_ps(v1, vr);
  if (w) {
    v0 = _mm512_mul_ps(v0, _mm512_loadu_ps(w));
    v1 = _mm512_mul_ps(v1, _mm512_loadu_ps(w + 16));
  }
  simd::store32<NT>(y, v0, v1);
}

// forward_row512's output pass, the row's scale r given.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN void forward_row512_scaled(const T* x, const float* w, T* y, int64_t dim, float r) {
  const __m512 vr = _mm512_set1_ps(r);
  const int64_t vec = dim & ~int64_t(7);  // the 8-lane rows' vector part
  int64_t i = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    for (; i + 32 <= vec; i += 32) {
      __m512 v0, v1;
      simd::load32(x + i, lo_idx, hi_idx, &v0, &v1);
      scale_line32<NT>(v0, v1, vr, w ? w + i : nullptr, y + i);
    }
  }
  for (; i < vec; i += 16) {
    const __mmask16 m = simd::lanes16(i, vec);
    __m512 v = _mm512_mul_ps(simd::load16(x + i, m), vr);
    if (w) v = _mm512_mul_ps(v, simd::load16(w + i, m));
    out16<NT, Cvt>(y + i, v, m);
  }
  for (i = vec; i < dim; ++i) st(y + i, w ? ld(x + i) * r * w[i] : ld(x + i) * r);
}

// forward_row512's output pass of row x (scale r) in the same loop as sum_sq512 of the next row
// xn, whose sum it returns. sum_sq512's one accumulator is a chain of dependent FMAs (its
// latency, not memory or the FMA units, bounds that pass); the output pass has no chain, so the
// two overlap. Each pass keeps its operations and order: the same bits as the rows apart.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN float forward_row_and_sum512(const T* x, const float* w, T* y, int64_t dim,
                                            float r, const T* xn) {
  const __m512 vr = _mm512_set1_ps(r);
  const int64_t vec = dim & ~int64_t(7);
  __m512 a = _mm512_setzero_ps();
  int64_t i = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {  // every such step is within vec too
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    for (; i + 32 <= dim; i += 32) {
      __m512 n0, n1, v0, v1;
      simd::load32(xn + i, lo_idx, hi_idx, &n0, &n1);
      a = _mm512_fmadd_ps(n0, n0, a);
      a = _mm512_fmadd_ps(n1, n1, a);
      simd::load32(x + i, lo_idx, hi_idx, &v0, &v1);
      scale_line32<NT>(v0, v1, vr, w ? w + i : nullptr, y + i);
    }
  }
  for (; i + 16 <= dim; i += 16) {  // every such step is a full step of the output's vec too
    const __m512 vn = simd::load16(xn + i, simd::kAll16);
    a = _mm512_fmadd_ps(vn, vn, a);
    __m512 v = _mm512_mul_ps(simd::load16(x + i, simd::kAll16), vr);
    if (w) v = _mm512_mul_ps(v, simd::load16(w + i, simd::kAll16));
    out16<NT, Cvt>(y + i, v, simd::kAll16);
  }
  const int64_t i0 = i;
  if (i + 8 <= dim) {
    const __m512 v = simd::load16(xn + i, 0xff);
    a = _mm512_mask3_fmadd_ps(v, v, a, 0xff);
    i += 8;
  }
  float s = simd::hsum16(a);
  for (; i < dim; ++i) s += ld(xn + i) * ld(xn + i);
  for (i = i0; i < vec; i += 16) {
    const __mmask16 m = simd::lanes16(i, vec);
    __m512 v = _mm512_mul_ps(simd::load16(x + i, m), vr);
    if (w) v = _mm512_mul_ps(v, simd::load16(w + i, m));
    out16<NT, Cvt>(y + i, v, m);
  }
  for (i = vec; i < dim; ++i) st(y + i, w ? ld(x + i) * r * w[i] : ld(x + i) * r);
  return s;
}

// Rows [lo, hi) of the forward, each row's output pass with the next row's sum pass.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN void forward_rows512(const T* x, const float* w, T* y, int64_t lo, int64_t hi,
                                    int64_t dim, float eps) {
  if (lo >= hi) return;
  float s = sum_sq512(x + lo * dim, dim);
  for (int64_t r = lo; r < hi; ++r) {
    const float sc = 1.f / std::sqrt(s / float(dim) + eps);
    if (r + 1 < hi) {
      s = forward_row_and_sum512<NT, Cvt>(x + r * dim, w, y + r * dim, dim, sc, x + (r + 1) * dim);
    } else {
      forward_row512_scaled<NT, Cvt>(x + r * dim, w, y + r * dim, dim, sc);
    }
  }
}

// The backward on 16 lanes (bf16): backward_row's two passes. The two sums stay on 8 lanes in
// backward_row's order (one accumulator each, 8 elements a step: 16 lanes would split them in
// two); the second pass is element-wise, so it widens to 16 lanes as is. Each row's second pass
// runs in the same loop as the next row's first (as the forward's forward_row_and_sum512): the
// sums are two chains of dependent FMAs, whose latency bounds that pass, and the second pass has
// none, so the two overlap. Each pass keeps its operations and order: the same bits as the rows
// one after the other.

// One 8-element step of the sums of row x, dy.
template <class T>
TREX_RMS512_FN void sums_step8(const T* x, const float* w, const T* dy, int64_t i, __m256& as,
                               __m256& ad) {
  __m256 v = simd::load8(x + i), g = simd::load8(dy + i);
  if (w) g = _mm256_mul_ps(g, _mm256_loadu_ps(w + i));
  as = _mm256_fmadd_ps(v, v, as);
  ad = _mm256_fmadd_ps(g, v, ad);
}

// The sums' scalar tail after the 8-lane part (vec = dim rounded down to 8).
template <class T>
TREX_RMS512_FN void sums_tail(const T* x, const float* w, const T* dy, int64_t vec, int64_t dim,
                              __m256 as, __m256 ad, float* ss, float* sd) {
  float s = simd::hsum(as), d = simd::hsum(ad);
  for (int64_t i = vec; i < dim; ++i) {
    float v = ld(x + i), g = ld(dy + i) * (w ? w[i] : 1.f);
    s += v * v;
    d += g * v;
  }
  *ss = s, *sd = d;
}

// One 16-lane step (lanes m) of the second pass.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN void grad_step16(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                                int64_t i, __mmask16 m, __m512 vr, __m512 vc) {
  const __m512 v = simd::load16(x + i, m), d = simd::load16(dy + i, m);
  const __m512 g = w ? _mm512_mul_ps(d, simd::load16(w + i, m)) : d;
  out16<NT, Cvt>(dx + i, _mm512_fnmadd_ps(vc, v, _mm512_mul_ps(vr, g)), m);
  if (dwp)
    simd::store16(dwp + i, _mm512_fmadd_ps(_mm512_mul_ps(d, v), vr, simd::load16(dwp + i, m)), m);
}

template <class T>
TREX_RMS512_FN void grad_tail(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                              int64_t vec, int64_t dim, float r, float c) {
  for (int64_t i = vec; i < dim; ++i) {
    float v = ld(x + i), d = ld(dy + i), g = d * (w ? w[i] : 1.f);
    st(dx + i, r * g - c * v);
    if (dwp) dwp[i] += d * v * r;
  }
}

// Rows [lo, hi) of the backward (one dw chunk's).
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN void backward_rows512(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                                     int64_t lo, int64_t hi, int64_t dim, float eps) {
  if (lo >= hi) return;
  const int64_t vec = dim & ~int64_t(7);
  float ss, sd;
  {
    __m256 as = _mm256_setzero_ps(), ad = _mm256_setzero_ps();
    const T *x0 = x + lo * dim, *dy0 = dy + lo * dim;
    for (int64_t i = 0; i < vec; i += 8) sums_step8(x0, w, dy0, i, as, ad);
    sums_tail(x0, w, dy0, vec, dim, as, ad, &ss, &sd);
  }
  for (int64_t row = lo; row < hi; ++row) {
    const float r = 1.f / std::sqrt(ss / float(dim) + eps);
    const float c = r * r * r * sd / float(dim);
    const __m512 vr = _mm512_set1_ps(r), vc = _mm512_set1_ps(c);
    const int64_t o = row * dim;
    const T *xr = x + o, *dyr = dy + o;
    T* dxr = dx + o;
    if (row + 1 < hi) {  // this row's second pass with the next row's sums
      const T *xn = xr + dim, *dyn = dyr + dim;
      __m256 as = _mm256_setzero_ps(), ad = _mm256_setzero_ps();
      int64_t i = 0;
      for (; i + 16 <= vec; i += 16) {
        sums_step8(xn, w, dyn, i, as, ad);
        sums_step8(xn, w, dyn, i + 8, as, ad);
        grad_step16<NT, Cvt>(xr, w, dyr, dxr, dwp, i, simd::kAll16, vr, vc);
      }
      if (i < vec) {  // 8 left
        sums_step8(xn, w, dyn, i, as, ad);
        grad_step16<NT, Cvt>(xr, w, dyr, dxr, dwp, i, simd::lanes16(i, vec), vr, vc);
      }
      sums_tail(xn, w, dyn, vec, dim, as, ad, &ss, &sd);
    } else {
      for (int64_t i = 0; i < vec; i += 16)
        grad_step16<NT, Cvt>(xr, w, dyr, dxr, dwp, i, simd::lanes16(i, vec), vr, vc);
    }
    grad_tail(xr, w, dyr, dxr, dwp, vec, dim, r, c);
  }
}

#endif  // TREX_ELEM_AVX2

// The rows of one dw chunk of a call: for bf16 on AVX-512 backward_rows512 (each row's second
// pass overlapping the next row's sums), else row after row (backward_row, 8 lanes).
template <class T>
using BackwardRows = void (*)(const T*, const float*, const T*, T*, float*, int64_t, int64_t,
                              int64_t, float);

template <bool NT, class T>
void backward_rows(const T* x, const float* w, const T* dy, T* dx, float* dwp, int64_t lo,
                   int64_t hi, int64_t dim, float eps) {
  for (int64_t r = lo; r < hi; ++r)
    backward_row<NT>(x + r * dim, w, dy + r * dim, dx + r * dim, dwp, dim, eps);
}

// The forward's rows [lo, hi) of a call: on AVX-512 (fp32 and bf16) forward_rows512, which
// overlaps each row's output pass with the next row's sum (fp32 took 16 lanes only with that:
// alone they measured no gain), else row after row on 8 lanes.
template <class T>
using ForwardRows = void (*)(const T*, const float*, T*, int64_t, int64_t, int64_t, float);

template <bool NT, class T>
void forward_rows(const T* x, const float* w, T* y, int64_t lo, int64_t hi, int64_t dim,
                  float eps) {
  for (int64_t r = lo; r < hi; ++r) forward_row<NT>(x + r * dim, w, y + r * dim, dim, eps);
}

template <class T>
ForwardRows<T> forward_rows_for(bool nt) {
#ifdef TREX_ELEM_AVX2
  if (row_isa() == core::Isa::kAvx512) {
    const bool cvt = core::cpu_features().avx512_bf16;
    return nt ? (cvt ? &forward_rows512<true, true, T> : &forward_rows512<true, false, T>)
              : (cvt ? &forward_rows512<false, true, T> : &forward_rows512<false, false, T>);
  }
#endif
  return nt ? &forward_rows<true, T> : &forward_rows<false, T>;
}

template <class T>
BackwardRows<T> backward_rows_for(bool nt) {
#ifdef TREX_ELEM_AVX2
  if (std::is_same_v<T, core::bf16> && row_isa() == core::Isa::kAvx512) {
    const bool cvt = core::cpu_features().avx512_bf16;
    return nt ? (cvt ? &backward_rows512<true, true, T> : &backward_rows512<true, false, T>)
              : (cvt ? &backward_rows512<false, true, T> : &backward_rows512<false, false, T>);
  }
#endif
  return nt ? &backward_rows<true, T> : &backward_rows<false, T>;
}

}  // namespace

template <class T>
void rmsnorm_forward(const T* x, const float* w, T* y, int64_t rows, int64_t dim, float eps,
                     core::ThreadPool* pool) {
  if (rows <= 0 || dim <= 0) return;
  core::trace_count(0, 2.0 * double(rows * dim) * sizeof(T));  // x in, y out
  const RowBlocking rb = row_blocking("rmsnorm.fwd", rows, dim);
  bool nt = simd::use_streaming<T>(rows * dim, dim, {y}, rb.stream);
  const ForwardRows<T> fwd_rows = forward_rows_for<T>(nt);
  pool_or_default(pool).parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    fwd_rows(x, w, y, lo, hi, dim, eps);
    simd::fence_streams(nt);
  });
}

template <class T>
void rmsnorm_backward(const T* x, const float* w, const T* dy, T* dx, float* dw, int64_t rows,
                      int64_t dim, float eps, core::ThreadPool* pool) {
  if (dim <= 0) return;
  core::trace_count(0, 3.0 * double(rows * dim) * sizeof(T));  // x, dy in, dx out
  core::ThreadPool& tp = pool_or_default(pool);
  bool want_dw = w != nullptr && dw != nullptr;
  if (rows <= 0) {
    if (want_dw) std::fill(dw, dw + dim, 0.f);
    return;
  }
  int64_t n_chunks = (rows + kDwChunkRows - 1) / kDwChunkRows;
  bool nt = simd::use_streaming<T>(rows * dim, dim, {dx});
  // partial[c] = sum over the rows of chunk c of dy * xh; summed row by row inside a chunk.
  // From 2 MiB (rows x dim >= 32 Mi) the allocator hands the same pages to the next call of the
  // same shape (arena.cc keeps freed large buffers), so they are faulted in once, not per call.
  std::unique_ptr<float[], core::AlignedDeleter> partial;
  if (want_dw) partial = core::aligned_array<float>(size_t(n_chunks * dim));
  const BackwardRows<T> chunk_rows = backward_rows_for<T>(nt);
  tp.parallel_for(0, n_chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* dwp = want_dw ? partial.get() + c * dim : nullptr;
      if (dwp) std::fill(dwp, dwp + dim, 0.f);
      int64_t r1 = std::min(rows, (c + 1) * kDwChunkRows);
      chunk_rows(x, w, dy, dx, dwp, c * kDwChunkRows, r1, dim, eps);
    }
    simd::fence_streams(nt);
  });
  if (!want_dw) return;
  // Fixed pairwise tree over chunks (shape depends on n_chunks only), parallel over columns.
  tp.parallel_for(0, dim, 1024, [&](int64_t j0, int64_t j1) {
    for (int64_t step = 1; step < n_chunks; step *= 2)
      for (int64_t c = 0; c + step < n_chunks; c += 2 * step) {
        float* a = partial.get() + c * dim;
        const float* b = partial.get() + (c + step) * dim;
        for (int64_t j = j0; j < j1; ++j) a[j] += b[j];
      }
    for (int64_t j = j0; j < j1; ++j) dw[j] = partial[size_t(j)];
  });
}

#define TREX_INSTANTIATE(T)                                                                    \
  template void rmsnorm_forward<T>(const T*, const float*, T*, int64_t, int64_t, float,       \
                                   core::ThreadPool*);                                        \
  template void rmsnorm_backward<T>(const T*, const float*, const T*, T*, float*, int64_t,    \
                                    int64_t, float, core::ThreadPool*);
TREX_INSTANTIATE(float)
TREX_INSTANTIATE(core::bf16)
#undef TREX_INSTANTIATE

}  // namespace trex::kernels
