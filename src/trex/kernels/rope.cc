// Fused unified RoPE: each head row is read once and written once; the rotated tail is
// y = v * C + swap_pairs(v) * (sign * S) with the per-position rows C, S of the table, which keeps
// the interleaved layout in registers (one in-lane permute) instead of splitting even and odd.
// An output far larger than the caches is written with streaming stores (simd::use_streaming, as
// the other row kernels): a plain store first reads the line it writes, a third of a copy's
// traffic. Same values either way: the pass-through dims are copied as bits. bf16 rows rotate
// on AVX-512 where the CPU has it (rotate_row512, the same bits).
#include "trex/core/trace.h"
#include "trex/kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>

#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {
namespace {

using core::pool_or_default;

using simd::ld;
using simd::st;

// The pass-through dims: bits, copied 32 bytes at a time with streaming stores when NT (y on a
// 32-byte boundary), the rest by memcpy.
template <bool NT>
void copy_bytes(const void* x, void* y, size_t n) {
  size_t b = 0;
#ifdef TREX_ELEM_AVX2
  if constexpr (NT)
    for (; b + 32 <= n; b += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(y) + b),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const char*>(x) + b)));
#endif
  std::memcpy(static_cast<char*>(y) + b, static_cast<const char*>(x) + b, n - b);
}

// NT requires the rotated dims to start on a 32-byte boundary (rope_apply checks).
template <bool NT, class T>
void rotate_row(const T* x, T* y, int64_t head_dim, int rd, const float* c, const float* s,
                float sign) {
  int64_t o = head_dim - rd;
  copy_bytes<NT>(x, y, size_t(o) * sizeof(T));  // same storage type: the pass-through dims are bits
  const T* xv = x + o;
  T* yv = y + o;
  int j = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vs = _mm256_set1_ps(sign);
  for (; j + 8 <= rd; j += 8) {
    __m256 v = simd::load8(xv + j);
    __m256 sw = _mm256_permute_ps(v, 0xB1);  // (v1, v0) per pair
    __m256 sn = _mm256_mul_ps(_mm256_loadu_ps(s + j), vs);
    simd::put8<NT>(yv + j, _mm256_fmadd_ps(v, _mm256_loadu_ps(c + j), _mm256_mul_ps(sw, sn)));
  }
#endif
  for (; j < rd; j += 2) {
    float v0 = ld(xv + j), v1 = ld(xv + j + 1);
    st(yv + j, v0 * c[j] + v1 * (sign * s[j]));
    st(yv + j + 1, v1 * c[j + 1] + v0 * (sign * s[j + 1]));
  }
}

#ifdef TREX_ELEM_AVX2
// rotate_row on AVX-512 (row_isa()): the rotated dims 16 lanes a step, bf16 a line (32) a step
// where the CPU has AVX512_BF16 (two load16 halves: simd::load32's word permutes measured slower,
// session 24; store32: one vcvtne2ps2bf16 per line; the 8-lane steps spent about 20 instructions per 8 bf16, most of
// them widening and rounding). The sign is a template argument: sign * s is s or its exact
// negation, so v c + sw (sign s) is fmadd(v, c, sw s) or fmsub(v, c, sw s), the same bits without
// the multiply by the sign. The vector part is rotate_row's (rd rounded down to 8, the last step
// of 8 under a mask) and its scalar tail is rotate_row's code: the same bits as rotate_row.
template <bool Neg>
TREX_AVX512_FN __m512 rotate16(__m512 v, const float* c, const float* s, __mmask16 m) {
  const __m512 sw = _mm512_maskz_permute_ps(simd::kAll16, v, 0xB1);  // (v1, v0) per pair
  const __m512 p = _mm512_mul_ps(sw, simd::load16(s, m));
  return Neg ? _mm512_fmsub_ps(v, simd::load16(c, m), p) : _mm512_fmadd_ps(v, simd::load16(c, m), p);
}

template <bool NT, bool Cvt, bool Neg, class T>
TREX_AVX512BF16_FN void rotate_row512(const T* x, T* y, int64_t head_dim, int rd, const float* c,
                                      const float* s) {
  const int64_t o = head_dim - rd;
  copy_bytes<NT>(x, y, size_t(o) * sizeof(T));
  const T* xv = x + o;
  T* yv = y + o;
  const int vec = rd & ~7;
  int j = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    for (; j + 32 <= vec; j += 32) {
      const __m512 v0 = simd::load16(xv + j, simd::kAll16), v1 = simd::load16(xv + j + 16, simd::kAll16);
      simd::store32<NT>(yv + j, rotate16<Neg>(v0, c + j, s + j, simd::kAll16),
                        rotate16<Neg>(v1, c + j + 16, s + j + 16, simd::kAll16));
    }
  }
  for (; j < vec; j += 16) {
    const __mmask16 m = simd::lanes16(j, vec);
    const __m512 y16 = rotate16<Neg>(simd::load16(xv + j, m), c + j, s + j, m);
    if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(yv + j, y16, m);
    else simd::put16<NT>(yv + j, y16, m);
  }
  const float sign = Neg ? -1.f : 1.f;
  for (; j < rd; j += 2) {  // rotate_row's tail
    float v0 = ld(xv + j), v1 = ld(xv + j + 1);
    st(yv + j, v0 * c[j] + v1 * (sign * s[j]));
    st(yv + j + 1, v1 * c[j + 1] + v0 * (sign * s[j + 1]));
  }
}
#endif

// The row function of a call: bf16 rows on AVX-512 rotate_row512, else rotate_row (8 lanes).
// fp32 rows stay on 8 lanes: on 16 they measured slower (one-process A/B, 1 thread, [4096, 8,
// 512]: 0.71x from memory, 0.96x in L2; unexplained), where bf16 rows gained (1.11x, 1.22x);
// all four from the A/B driver's first version, whose sides wrote separate output buffers and
// which read 0.71-1.14x with the same code on both sides (bench/results/rows_s23/README.md):
// not re-measured.
template <class T>
using RotateRow = void (*)(const T*, T*, int64_t, int, const float*, const float*, float);

template <bool NT, bool Cvt, class T>
void rotate_row512_any_sign(const T* x, T* y, int64_t head_dim, int rd, const float* c,
                            const float* s, float sign) {
#ifdef TREX_ELEM_AVX2
  if (sign < 0) rotate_row512<NT, Cvt, true>(x, y, head_dim, rd, c, s);
  else rotate_row512<NT, Cvt, false>(x, y, head_dim, rd, c, s);
#else
  rotate_row<NT>(x, y, head_dim, rd, c, s, sign);
#endif
}

template <class T>
RotateRow<T> rotate_row_for(bool nt) {
  if (std::is_same_v<T, core::bf16> && row_isa() == core::Isa::kAvx512) {
    const bool cvt = core::cpu_features().avx512_bf16;
    return nt ? (cvt ? &rotate_row512_any_sign<true, true, T> : &rotate_row512_any_sign<true, false, T>)
              : (cvt ? &rotate_row512_any_sign<false, true, T> : &rotate_row512_any_sign<false, false, T>);
  }
  return nt ? &rotate_row<true, T> : &rotate_row<false, T>;
}

}  // namespace

void yarn_bounds(const RopeFreqConfig& c, double* lo, double* hi) {
  auto dcorr = [&](double r) {
    return c.rope_dim * std::log(c.original_len / (2 * std::numbers::pi * r)) /
           (2 * std::log(c.base));
  };
  *lo = std::max(std::floor(dcorr(c.beta_fast)), 0.0);
  *hi = std::min(std::ceil(dcorr(c.beta_slow)), double(c.rope_dim - 1));
  if (*lo == *hi) *hi += 0.001;
}

std::vector<double> rope_frequencies(const RopeFreqConfig& c) {
  int half = c.rope_dim / 2;
  std::vector<double> w(size_t(std::max(half, 0)));
  double lo = 0, hi = 1;
  if (c.yarn) yarn_bounds(c, &lo, &hi);
  for (int p = 0; p < half; ++p) {
    double wp = std::pow(c.base, -2.0 * p / c.rope_dim);
    if (c.yarn) {
      double ramp = std::clamp((p - lo) / (hi - lo), 0.0, 1.0);
      wp = wp / c.factor * ramp + wp * (1 - ramp);
    }
    w[size_t(p)] = wp;
  }
  return w;
}

RopeTable rope_table(const std::vector<double>& freq, int64_t max_pos) {
  RopeTable t;
  t.rope_dim = int(freq.size()) * 2;
  t.max_pos = max_pos;
  t.cos.resize(size_t(max_pos * t.rope_dim));
  t.sin.resize(t.cos.size());
  for (int64_t pos = 0; pos < max_pos; ++pos)
    for (size_t p = 0; p < freq.size(); ++p) {
      double th = double(pos) * freq[p];
      size_t i = size_t(pos * t.rope_dim) + 2 * p;
      t.cos[i] = t.cos[i + 1] = float(std::cos(th));
      t.sin[i] = -float(std::sin(th));
      t.sin[i + 1] = float(std::sin(th));
    }
  return t;
}

template <class T>
void rope_apply(const T* x, T* y, const int64_t* pos, int64_t tokens, int64_t heads,
                int64_t head_dim, const RopeTable& table, int sign, core::ThreadPool* pool) {
  if (tokens <= 0 || heads <= 0 || head_dim <= 0) return;
  core::trace_count(0, 2.0 * double(tokens * heads * head_dim) * sizeof(T));  // x in, y out
  int rd = table.rope_dim;
  int64_t row = heads * head_dim;
  const int64_t block = tuned_or("rope.fwd", {tokens, heads, head_dim}, "block_elems",
                                 builtin::row_block_elems(tokens, row));
  int64_t grain = std::max<int64_t>(1, block / row);
  float sg = sign < 0 ? -1.f : 1.f;
  // Streaming needs every head row (use_streaming: rows of head_dim) and its rotated dims on
  // 32-byte boundaries, and an output far larger than the caches. In place (x == y) it is not used.
  const bool nt = x != y && (int64_t(head_dim - rd) * int64_t(sizeof(T))) % 32 == 0 &&
                  simd::use_streaming<T>(tokens * row, head_dim, {y});
  const RotateRow<T> rotate = rotate_row_for<T>(nt);
  pool_or_default(pool).parallel_for(0, tokens, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const float* c = table.cos.data() + pos[t] * rd;
      const float* s = table.sin.data() + pos[t] * rd;
      for (int64_t h = 0; h < heads; ++h)
        rotate(x + t * row + h * head_dim, y + t * row + h * head_dim, head_dim, rd, c, s, sg);
    }
    simd::fence_streams(nt);
  });
}

template void rope_apply<float>(const float*, float*, const int64_t*, int64_t, int64_t, int64_t,
                                const RopeTable&, int, core::ThreadPool*);
template void rope_apply<core::bf16>(const core::bf16*, core::bf16*, const int64_t*, int64_t,
                                     int64_t, int64_t, const RopeTable&, int, core::ThreadPool*);

}  // namespace trex::kernels
