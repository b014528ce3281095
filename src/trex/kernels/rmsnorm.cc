// Fused RMSNorm: one pass over a row to get sum(x^2) (and sum(w dy x) in the backward), a second
// pass over the same row, still in L1/L2, to write the output. Memory traffic is the minimum:
// forward reads x and writes y, backward reads x and dy and writes dx (plus dw partials).
// bf16 rows run on 16 lanes where the CPU has AVX-512 (row_isa()), with stores by vcvtneps2bf16
// where it has AVX512_BF16: on 8 lanes they were bound by instructions (a widening of 2 and a
// rounding of ~10 per 8 elements), not by memory. The backward's fp32 rows stay on 8 lanes
// (memory-bound there; 16 lanes measured no gain). The forward on AVX-512 (fp32 and bf16) runs
// each row's output pass in the loop of the next row's sum of squares (forward_rows512): that
// sum is one chain of dependent FMAs, bound by their latency, so the two passes overlap (not
// fp32 rows of 256 elements and more with normal stores over 4 MiB of x a thread:
// kApartRowElems says why); the
// bf16 backward does the same with pairs of rows (backward_rows512). The 16-lane
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
// The backward's steps, inlined into the row loop whatever GCC's size estimate (a call per step
// would cost more than the step's work).
#define TREX_RMS512_STEP TREX_RMS512_FN inline __attribute__((always_inline))

// A bf16 store through vcvtneps2bf16 where the CPU has AVX512_BF16 (Cvt; same bits, see
// round16_cvt), else put16.
template <bool NT, bool Cvt, class T>
TREX_RMS512_FN inline void out16(T* p, __m512 v, __mmask16 m) {
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(p, v, m);
  else simd::put16<NT>(p, v, m);
}

// A line of bf16 as two 16-lane halves by load16's widening (vpmovzxwd + shift): simd::load32's
// word permutes measured slower on this machine (session 24, see backward_rows512).
TREX_RMS512_FN inline __attribute__((always_inline)) void load_line16x2(const core::bf16* p,
                                                                        __m512* lo, __m512* hi) {
  *lo = simd::load16(p, simd::kAll16), *hi = simd::load16(p + 16, simd::kAll16);
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
    for (; i + 32 <= dim; i += 32) {
      __m512 v0, v1;
      load_line16x2(x + i, &v0, &v1);
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

// bf16 rows on AVX512_BF16 take a line (32 elements) per step: two 16-lane halves
// (load_line16x2: since session 24, simd::load32's word permutes measured slower), and one
// vcvtne2ps2bf16 for the line's store instead of a rounding and a denormal test per half (one
// 64-byte streaming store where y's rows start on 64 bytes: simd::put_line). Lanes 0-15 and
// 16-31 are the two 16-lane steps' values, summed into the one accumulator in the same order:
// the same bits. scale_line32: a line's output step, y = x r w.
template <simd::LineStore S>
TREX_RMS512_FN void scale_line32(__m512 v0, __m512 v1, __m512 vr, const float* w, core::bf16* y) {
  v0 = _mm512_mul_ps(v0, vr);
  v1 = _mm512_mul_ps(v1, vr);
  if (w) {
    v0 = _mm512_mul_ps(v0, _mm512_loadu_ps(w));
    v1 = _mm512_mul_ps(v1, _mm512_loadu_ps(w + 16));
  }
  const __m512i h = _kortestz_mask16_u8(_mm512_fpclass_ps_mask(v0, 0x20), _mm512_fpclass_ps_mask(v1, 0x20))
                        ? simd::words32<true>(v0, v1)
                        : simd::words32<false>(v0, v1);
  simd::put_line<S>(y, h);
}

// forward_row512's output pass, the row's scale r given.
template <simd::LineStore S, bool Cvt, class T>
TREX_RMS512_FN void forward_row512_scaled(const T* x, const float* w, T* y, int64_t dim, float r) {
  constexpr bool NT = S != simd::LineStore::kPlain;
  const __m512 vr = _mm512_set1_ps(r);
  const int64_t vec = dim & ~int64_t(7);  // the 8-lane rows' vector part
  int64_t i = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    for (; i + 32 <= vec; i += 32) {
      __m512 v0, v1;
      load_line16x2(x + i, &v0, &v1);
      scale_line32<S>(v0, v1, vr, w ? w + i : nullptr, y + i);
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
// xf (may be null): the row after xn, whose lines are requested into L2 on the way, a line per
// step. Without it the sum pass's loads of xn waited on memory (a perf profile of the bf16 rows
// put over half the loop's samples on those loads): one thread's hardware prefetching did not
// keep a row ahead while its streaming stores went out.
template <simd::LineStore S, bool Cvt, class T>
TREX_RMS512_FN float forward_row_and_sum512(const T* x, const float* w, T* y, int64_t dim,
                                            float r, const T* xn, const T* xf) {
  constexpr bool NT = S != simd::LineStore::kPlain;
  const __m512 vr = _mm512_set1_ps(r);
  const int64_t vec = dim & ~int64_t(7);
  __m512 a = _mm512_setzero_ps();
  int64_t i = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {  // every such step is within vec too
    for (; i + 32 <= dim; i += 32) {
      __m512 n0, n1, v0, v1;
      if (xf) _mm_prefetch(reinterpret_cast<const char*>(xf + i), _MM_HINT_T1);
      load_line16x2(xn + i, &n0, &n1);
      a = _mm512_fmadd_ps(n0, n0, a);
      a = _mm512_fmadd_ps(n1, n1, a);
      load_line16x2(x + i, &v0, &v1);
      scale_line32<S>(v0, v1, vr, w ? w + i : nullptr, y + i);
    }
  }
  for (; i + 16 <= dim; i += 16) {  // every such step is a full step of the output's vec too
    if (xf && (i * int64_t(sizeof(T))) % 64 == 0)
      _mm_prefetch(reinterpret_cast<const char*>(xf + i), _MM_HINT_T1);
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

// fp32 rows of at least this many elements with normal stores keep their two passes apart
// (forward_rows512): where x and y come from L3 or memory, a sum pass of loads alone followed by
// the output pass on the row still in L1 beats the fused loop, which reads the next row from L3
// and this row again while y's lines are fetched for writing. At one thread on the Zen 4 VM (nice
// -20 lane, fastest calls, 64-byte aligned rows): 512x4096 apart 0.84x the fused time, 4096x1024
// 0.53x, 16384x256 0.80x; 128-element rows (16384x128) lost 1.19x apart, bf16 rows (a line per
// step, twice the work a byte) lost 1.15x at 512x4096. Not the sum's FMA chain (four accumulators
// in the fused loop measured no faster), not L1's capacity (1024-element rows, 12 KiB between a
// row's two reads, lost most), not y's offset from x (2 KiB moved nothing), not the distance of
// requests: the next row into L2, y's lines for writing, x's into L1 ahead did not recover it.
// This VM has no hardware counters to say more (perf lists no PMU events). Only where a thread's
// share of x is at least kApartBytesPerThread: at two threads the fused loop kept up with 4 MiB
// per thread (2048x1024, 4096x512: 0.998-1.008x) and won with 2 MiB (the v4-micro norms, 2048x512:
// apart 70 -> 94 us a call, 15 of 16 alternating runs slower; bench/results/lane_s28/rms2t_proc),
// and at one thread 2 MiB sets (128x4096) ran alike either way.
constexpr int64_t kApartRowElems = 256;
constexpr int64_t kApartBytesPerThread = int64_t(4) << 20;

// Rows [lo, hi) of the forward, each row's output pass with the next row's sum pass (Apart:
// fp32 rows of kApartRowElems and more, each row's two passes in turn, the same operations in the
// same order).
template <simd::LineStore S, bool Cvt, class T, bool Apart = false>
TREX_RMS512_FN void forward_rows512(const T* x, const float* w, T* y, int64_t lo, int64_t hi,
                                    int64_t dim, float eps) {
  if (lo >= hi) return;
  if (Apart && S == simd::LineStore::kPlain && std::is_same_v<T, float> && dim >= kApartRowElems) {
    for (int64_t r = lo; r < hi; ++r) {
      const float sc = 1.f / std::sqrt(sum_sq512(x + r * dim, dim) / float(dim) + eps);
      forward_row512_scaled<S, Cvt>(x + r * dim, w, y + r * dim, dim, sc);
    }
    return;
  }
  // Rows are requested ahead only where y is streamed (much larger than the caches): from cache
  // the requests cost their instructions and gained nothing (fp32 [130, 4096] 0.929x).
  constexpr bool kRequest = S != simd::LineStore::kPlain;
  float s = sum_sq512(x + lo * dim, dim);
  for (int64_t r = lo; r < hi; ++r) {
    const float sc = 1.f / std::sqrt(s / float(dim) + eps);
    if (r + 1 < hi) {
      s = forward_row_and_sum512<S, Cvt>(x + r * dim, w, y + r * dim, dim, sc, x + (r + 1) * dim,
                                         kRequest && r + 2 < hi ? x + (r + 2) * dim : nullptr);
    } else {
      forward_row512_scaled<S, Cvt>(x + r * dim, w, y + r * dim, dim, sc);
    }
  }
}

// The backward on 16 lanes (bf16): backward_row's two passes. The two sums keep backward_row's
// 8-lane order (one 8-lane chain each, 8 elements a step) but share one 16-lane accumulator
// ([as | ad], sums_line32 below); the second pass is element-wise, so it widens to 16 lanes as
// is. Rows go in pairs: each pair's second pass runs in the same loop as the next pair's sums
// (group_pass512): the sums are chains of dependent FMAs, whose latency bounds that pass, the
// second pass has none, and two rows' chains run side by side. Each pass keeps its operations
// and order (dw's terms added column by column in row order): the same bits as the rows one
// after the other.

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

// The two sums on one 16-lane accumulator: lanes 0-7 are backward_row's as, lanes 8-15 its ad,
// and each 8-element step is one FMA of [x | g] by [x | x] (g = dy w): lane j adds x_j x_j, lane
// 8 + j adds g_j x_j, the same FMA on the same values as the two 8-lane chains, in the same order:
// the same bits, with half the FMAs and, for bf16 on AVX-512 BW, a line of x and of dy widened
// into the four steps' [x | dy] by one two-source word permute each (zero-masked: each word in
// the top half of its lane, load16's shift), [x | x] by one 128-bit lane shuffle of it, and w's
// multiply masked to lanes 8-15. sums_halves gives as and ad back to sums_tail.
struct SumsIndex {
  __m512i idx[4];  // step k of a line: x words 8k .. 8k + 7, then dy words 8k .. 8k + 7
  TREX_RMS512_FN SumsIndex() {
    for (int k = 0; k < 4; ++k) {
      alignas(64) int16_t v[32];
      for (int j = 0; j < 16; ++j)
        v[2 * j] = 0, v[2 * j + 1] = int16_t(j < 8 ? 8 * k + j : 32 + 8 * k + j - 8);
      idx[k] = _mm512_load_si512(v);
    }
  }
};

// [x | g] of an 8-element step from the [x | dy] it was widened to: w's multiply on lanes 8-15
// (the lanes past w's step are masked off, never read).
TREX_RMS512_STEP __m512 times_w_high(__m512 xd, const float* w, int64_t i) {
  if (!w) return xd;
  return _mm512_mask_mul_ps(xd, 0xff00, xd, _mm512_maskz_loadu_ps(0xff00, w + i - 8));
}

// Four 8-element steps (a line of bf16) of the sums at column i.
TREX_RMS512_STEP void sums_line32(const core::bf16* x, const float* w, const core::bf16* dy,
                                int64_t i, const SumsIndex& si, __m512& acc) {
  const __m512i xl = _mm512_loadu_si512(x + i), dl = _mm512_loadu_si512(dy + i);
  for (int k = 0; k < 4; ++k) {
    const __m512 xd =
        _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau, xl, si.idx[k], dl));
    const __m512 xx = _mm512_maskz_shuffle_f32x4(simd::kAll16, xd, xd, 0x44);  // [x | x]
    acc = _mm512_fmadd_ps(times_w_high(xd, w, i + 8 * k), xx, acc);
  }
}

// One 8-element step of the sums on the 16-lane accumulator (any T).
template <class T>
TREX_RMS512_STEP void sums_step8x(const T* x, const float* w, const T* dy, int64_t i, __m512& acc) {
  const __m256 v = simd::load8(x + i), d = simd::load8(dy + i);
  const __m512 xd = _mm512_insertf32x8(_mm512_castps256_ps512(v), d, 1);
  const __m512 xx = _mm512_insertf32x8(_mm512_castps256_ps512(v), v, 1);
  acc = _mm512_fmadd_ps(times_w_high(xd, w, i), xx, acc);
}

TREX_RMS512_STEP void sums_halves(__m512 acc, __m256& as, __m256& ad) {
  as = simd::low8(acc), ad = simd::high8(acc);
}

// One 16-lane step (lanes m) of the second pass.
template <bool NT, bool Cvt, class T>
TREX_RMS512_STEP void grad_step16(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                                int64_t i, __mmask16 m, __m512 vr, __m512 vc) {
  const __m512 v = simd::load16(x + i, m), d = simd::load16(dy + i, m);
  const __m512 g = w ? _mm512_mul_ps(d, simd::load16(w + i, m)) : d;
  out16<NT, Cvt>(dx + i, _mm512_fnmadd_ps(vc, v, _mm512_mul_ps(vr, g)), m);
  if (dwp)
    simd::store16(dwp + i, _mm512_fmadd_ps(_mm512_mul_ps(d, v), vr, simd::load16(dwp + i, m)), m);
}

// Two grad_step16 steps (a line of bf16, AVX512_BF16) in one, in two parts: grad_line32_values
// forms the line's dx values (and adds its dw terms), grad_line32_emit converts them by one
// vcvtne2ps2bf16 after one denormal test and writes them by one put_line (a 64-byte streaming
// store where dx's rows start on 64-byte boundaries). group_pass512 emits line i - 32 after
// forming line i: the test, conversion and store wait on the values' loads and FMAs, and issued
// right behind them they filled the FP schedulers (as SwiGLU's lines did, swiglu.cc's
// gate_line), so fewer lines overlapped. x and dy keep load16's widening: simd::load32's word
// permutes measured slower here (session 24: in L2 1.03x against 1.13x with load16). The same
// values and operations per element as the two steps: the same bits.
TREX_RMS512_STEP void grad_line32_values(const core::bf16* x, const float* w, const core::bf16* dy,
                                         float* dwp, int64_t i, __m512 vr, __m512 vc, __m512* o0,
                                         __m512* o1) {
  const __m512 v0 = simd::load16(x + i, simd::kAll16), v1 = simd::load16(x + i + 16, simd::kAll16);
  const __m512 d0 = simd::load16(dy + i, simd::kAll16), d1 = simd::load16(dy + i + 16, simd::kAll16);
  const __m512 g0 = w ? _mm512_mul_ps(d0, _mm512_loadu_ps(w + i)) : d0;
  const __m512 g1 = w ? _mm512_mul_ps(d1, _mm512_loadu_ps(w + i + 16)) : d1;
  *o0 = _mm512_fnmadd_ps(vc, v0, _mm512_mul_ps(vr, g0));
  *o1 = _mm512_fnmadd_ps(vc, v1, _mm512_mul_ps(vr, g1));
  if (dwp) {
    _mm512_storeu_ps(dwp + i, _mm512_fmadd_ps(_mm512_mul_ps(d0, v0), vr, _mm512_loadu_ps(dwp + i)));
    _mm512_storeu_ps(dwp + i + 16,
                     _mm512_fmadd_ps(_mm512_mul_ps(d1, v1), vr, _mm512_loadu_ps(dwp + i + 16)));
  }
}
template <simd::LineStore S>
TREX_RMS512_STEP void grad_line32_emit(core::bf16* dx, int64_t i, __m512 o0, __m512 o1) {
  const __m512i h = _kortestz_mask16_u8(_mm512_fpclass_ps_mask(o0, 0x20), _mm512_fpclass_ps_mask(o1, 0x20))
                        ? simd::words32<true>(o0, o1)
                        : simd::words32<false>(o0, o1);
  simd::put_line<S>(dx + i, h);
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

// Requests p's line into L2 (see forward_row_and_sum512).
template <class T>
TREX_RMS512_STEP void request_line(const T* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
}

// One pass over the columns for a group of rows: the second pass of NR rows (first .. first + NR,
// scales r[k], c[k]) and the sums of the next NN rows (first + NR ..), into ss[n], sd[n]. Each
// row's sums are one chain of dependent FMAs (an FMA per 8 elements: its latency, about 4
// cycles, bound a row's pass); NN = 2 rows' chains run side by side. The second pass adds the
// NR rows' dw terms to dwp column by column in row order, as rows one after the other do: every
// operation and order is the rows' own, the same bits.
// nf (0-2, bf16 lines): the rows after the sums' rows (the next pass's sums) are requested into
// L2 on the way, as in the forward (their loads otherwise waited on memory).
// (Each row's registers in variables of its own, not arrays: GCC kept __m512 arrays on the stack,
// a store and a load inside the FMA chain.)
template <simd::LineStore S, bool Cvt, class T, int NR, int NN>
TREX_RMS512_FN void group_pass512(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                                  int64_t first, int64_t dim, const float* r, const float* c,
                                  const SumsIndex& si, float* ss, float* sd, int64_t nf) {
  static_assert(NR <= 2 && NN <= 2);
  constexpr bool NT = S != simd::LineStore::kPlain;
  const int64_t vec = dim & ~int64_t(7);
  const int64_t o0 = first * dim, o1 = o0 + dim;  // the second pass's rows
  const int64_t n0 = (first + NR) * dim, n1 = n0 + dim;  // the sums' rows
  const T *x0 = x + o0, *x1 = x + o1, *dy0 = dy + o0, *dy1 = dy + o1;
  T *dx0 = dx + o0, *dx1 = dx + o1;
  const T *xn0 = x + n0, *xn1 = x + n1, *dyn0 = dy + n0, *dyn1 = dy + n1;
  const T *xf0 = x + n0 + NN * dim, *dyf0 = dy + n0 + NN * dim;  // the rows requested (nf of them)
  const __m512 vr0 = _mm512_set1_ps(NR > 0 ? r[0] : 0.f), vc0 = _mm512_set1_ps(NR > 0 ? c[0] : 0.f);
  const __m512 vr1 = _mm512_set1_ps(NR > 1 ? r[1] : 0.f), vc1 = _mm512_set1_ps(NR > 1 ? c[1] : 0.f);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  if constexpr (std::is_same_v<T, core::bf16>) {
    // AVX512_BF16 lines: the rows' dx values of line i formed (and dw's terms added, row by row)
    // before line i - 32's are converted and stored (grad_line32_emit), four values carried.
    [[maybe_unused]] __m512 p00 = _mm512_setzero_ps(), p01 = p00, p10 = p00, p11 = p00;
    for (; i + 32 <= vec; i += 32) {
      if constexpr (NT) {  // (nf is 0 otherwise: no test in the unstreamed loop)
        if (nf > 0) request_line(xf0 + i), request_line(dyf0 + i);
        if (nf > 1) request_line(xf0 + dim + i), request_line(dyf0 + dim + i);
      }
      if constexpr (NN > 0) sums_line32(xn0, w, dyn0, i, si, acc0);
      if constexpr (NN > 1) sums_line32(xn1, w, dyn1, i, si, acc1);
      if constexpr (Cvt) {
        __m512 q00, q01, q10, q11;
        if constexpr (NR > 0) grad_line32_values(x0, w, dy0, dwp, i, vr0, vc0, &q00, &q01);
        if constexpr (NR > 1) grad_line32_values(x1, w, dy1, dwp, i, vr1, vc1, &q10, &q11);
        if (i > 0) {
          if constexpr (NR > 0) grad_line32_emit<S>(dx0, i - 32, p00, p01);
          if constexpr (NR > 1) grad_line32_emit<S>(dx1, i - 32, p10, p11);
        }
        if constexpr (NR > 0) p00 = q00, p01 = q01;
        if constexpr (NR > 1) p10 = q10, p11 = q11;
      } else {
        if constexpr (NR > 0) {
          grad_step16<NT, Cvt>(x0, w, dy0, dx0, dwp, i, simd::kAll16, vr0, vc0);
          grad_step16<NT, Cvt>(x0, w, dy0, dx0, dwp, i + 16, simd::kAll16, vr0, vc0);
        }
        if constexpr (NR > 1) {
          grad_step16<NT, Cvt>(x1, w, dy1, dx1, dwp, i, simd::kAll16, vr1, vc1);
          grad_step16<NT, Cvt>(x1, w, dy1, dx1, dwp, i + 16, simd::kAll16, vr1, vc1);
        }
      }
    }
    if constexpr (Cvt && NR > 0) {
      if (i > 0) {  // the last line's dx
        grad_line32_emit<S>(dx0, i - 32, p00, p01);
        if constexpr (NR > 1) grad_line32_emit<S>(dx1, i - 32, p10, p11);
      }
    }
  }
  for (; i + 16 <= vec; i += 16) {
    if constexpr (NN > 0) sums_step8x(xn0, w, dyn0, i, acc0), sums_step8x(xn0, w, dyn0, i + 8, acc0);
    if constexpr (NN > 1) sums_step8x(xn1, w, dyn1, i, acc1), sums_step8x(xn1, w, dyn1, i + 8, acc1);
    if constexpr (NR > 0) grad_step16<NT, Cvt>(x0, w, dy0, dx0, dwp, i, simd::kAll16, vr0, vc0);
    if constexpr (NR > 1) grad_step16<NT, Cvt>(x1, w, dy1, dx1, dwp, i, simd::kAll16, vr1, vc1);
  }
  if (i < vec) {  // 8 left
    const __mmask16 m = simd::lanes16(i, vec);
    if constexpr (NN > 0) sums_step8x(xn0, w, dyn0, i, acc0);
    if constexpr (NN > 1) sums_step8x(xn1, w, dyn1, i, acc1);
    if constexpr (NR > 0) grad_step16<NT, Cvt>(x0, w, dy0, dx0, dwp, i, m, vr0, vc0);
    if constexpr (NR > 1) grad_step16<NT, Cvt>(x1, w, dy1, dx1, dwp, i, m, vr1, vc1);
  }
  __m256 as, ad;
  if constexpr (NN > 0) {
    sums_halves(acc0, as, ad);
    sums_tail(xn0, w, dyn0, vec, dim, as, ad, &ss[0], &sd[0]);
  }
  if constexpr (NN > 1) {
    sums_halves(acc1, as, ad);
    sums_tail(xn1, w, dyn1, vec, dim, as, ad, &ss[1], &sd[1]);
  }
  if constexpr (NR > 0) grad_tail(x0, w, dy0, dx0, dwp, vec, dim, r[0], c[0]);
  if constexpr (NR > 1) grad_tail(x1, w, dy1, dx1, dwp, vec, dim, r[1], c[1]);
}

// Rows [lo, hi) of the backward (one dw chunk's), two rows at a time: each pair's second pass
// with the next pair's sums (group_pass512), the first pair's sums alone.
template <simd::LineStore S, bool Cvt, class T>
TREX_RMS512_FN void backward_rows512(const T* x, const float* w, const T* dy, T* dx, float* dwp,
                                     int64_t lo, int64_t hi, int64_t dim, float eps) {
  if (lo >= hi) return;
  const SumsIndex si;
  float ss[2], sd[2], r[2], c[2];
  // nf: how many rows after a pass's sums' rows are requested (the next pass's sums, up to hi);
  // only where dx is streamed (much larger than the caches: from cache, bf16 [130, 4096],
  // the requests cost 0.874x).
  constexpr int64_t kRequest = S != simd::LineStore::kPlain ? 2 : 0;
  if (hi - lo >= 2)
    group_pass512<S, Cvt, T, 0, 2>(x, w, dy, dx, dwp, lo, dim, r, c, si, ss, sd,
                                   std::max<int64_t>(0, std::min<int64_t>(kRequest, hi - lo - 2)));
  else
    group_pass512<S, Cvt, T, 0, 1>(x, w, dy, dx, dwp, lo, dim, r, c, si, ss, sd, 0);
  for (int64_t row = lo; row < hi; row += 2) {
    const int64_t nr = std::min<int64_t>(2, hi - row), nn = std::min<int64_t>(2, hi - row - nr);
    const int64_t nf = std::max<int64_t>(0, std::min<int64_t>(kRequest, hi - row - nr - nn));
    for (int k = 0; k < nr; ++k) {
      r[k] = 1.f / std::sqrt(ss[k] / float(dim) + eps);
      c[k] = r[k] * r[k] * r[k] * sd[k] / float(dim);
    }
    if (nr == 2 && nn == 2)
      group_pass512<S, Cvt, T, 2, 2>(x, w, dy, dx, dwp, row, dim, r, c, si, ss, sd, nf);
    else if (nr == 2 && nn == 1)
      group_pass512<S, Cvt, T, 2, 1>(x, w, dy, dx, dwp, row, dim, r, c, si, ss, sd, nf);
    else if (nr == 2)
      group_pass512<S, Cvt, T, 2, 0>(x, w, dy, dx, dwp, row, dim, r, c, si, ss, sd, nf);
    else
      group_pass512<S, Cvt, T, 1, 0>(x, w, dy, dx, dwp, row, dim, r, c, si, ss, sd, nf);
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

// apart: fp32 rows of kApartRowElems and more whose thread share of x is kApartBytesPerThread
// and more (forward_rows512's Apart; only with normal stores).
template <class T>
ForwardRows<T> forward_rows_for(bool nt, const T* y, int64_t dim, bool apart = false) {
#ifdef TREX_ELEM_AVX2
  if (row_isa() == core::Isa::kAvx512) {
    const bool cvt = core::cpu_features().avx512_bf16;
    using simd::LineStore;
    // y's bf16 lines (AVX512_BF16): one 64-byte streaming store where y's rows start on 64 bytes.
    const bool line64 = cvt && reinterpret_cast<uintptr_t>(y) % 64 == 0 && (dim * sizeof(T)) % 64 == 0;
    if (!nt && apart && std::is_same_v<T, float> && dim >= kApartRowElems)
      return cvt ? &forward_rows512<LineStore::kPlain, true, T, true> : &forward_rows512<LineStore::kPlain, false, T, true>;
    if (!nt) return cvt ? &forward_rows512<LineStore::kPlain, true, T> : &forward_rows512<LineStore::kPlain, false, T>;
    if (line64) return &forward_rows512<LineStore::kStream64, true, T>;
    return cvt ? &forward_rows512<LineStore::kStream32, true, T> : &forward_rows512<LineStore::kStream32, false, T>;
  }
#endif
  return nt ? &forward_rows<true, T> : &forward_rows<false, T>;
}

// dx's line stores on the AVX512_BF16 path: streamed 64 bytes at a time where every row of dx
// starts on a 64-byte boundary, else in 32-byte halves (use_streaming's alignment), else plain.
template <class T>
BackwardRows<T> backward_rows_for(bool nt, const T* dx, int64_t dim) {
#ifdef TREX_ELEM_AVX2
  if (std::is_same_v<T, core::bf16> && row_isa() == core::Isa::kAvx512) {
    using simd::LineStore;
    const bool cvt = core::cpu_features().avx512_bf16;
    const bool line64 = reinterpret_cast<uintptr_t>(dx) % 64 == 0 && (dim * sizeof(T)) % 64 == 0;
    if (!nt) return cvt ? &backward_rows512<LineStore::kPlain, true, T> : &backward_rows512<LineStore::kPlain, false, T>;
    if (!cvt) return &backward_rows512<LineStore::kStream32, false, T>;
    return line64 ? &backward_rows512<LineStore::kStream64, true, T>
                  : &backward_rows512<LineStore::kStream32, true, T>;
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
  core::ThreadPool& tp = pool_or_default(pool);
  const bool apart = rows * dim * int64_t(sizeof(T)) >= kApartBytesPerThread * std::max(1, tp.num_threads());
  const ForwardRows<T> fwd_rows = forward_rows_for<T>(nt, y, dim, apart);
  tp.parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
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
  const BackwardRows<T> chunk_rows = backward_rows_for<T>(nt, dx, dim);
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
