// Fused unified RoPE: each head row is read once and written once; the rotated tail is
// y = v * C + swap_pairs(v) * (sign * S) with the per-position rows C, S of the table, which keeps
// the interleaved layout in registers (one in-lane permute) instead of splitting even and odd.
// An output far larger than the caches is written with streaming stores (simd::use_streaming, as
// the other row kernels): a plain store first reads the line it writes, a third of a copy's
// traffic. Same values either way: the pass-through dims are copied as bits.
#include "trex/core/trace.h"
#include "trex/kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "trex/kernels/elementwise_simd.h"
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
  const int64_t block = tuned_or("rope.fwd", {tokens, heads, head_dim}, "block_elems", builtin::kBlockElems);
  int64_t grain = std::max<int64_t>(1, block / row);
  float sg = sign < 0 ? -1.f : 1.f;
  // Streaming needs every head row (use_streaming: rows of head_dim) and its rotated dims on
  // 32-byte boundaries, and an output far larger than the caches. In place (x == y) it is not used.
  const bool nt = x != y && (int64_t(head_dim - rd) * int64_t(sizeof(T))) % 32 == 0 &&
                  simd::use_streaming<T>(tokens * row, head_dim, {y});
  pool_or_default(pool).parallel_for(0, tokens, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const float* c = table.cos.data() + pos[t] * rd;
      const float* s = table.sin.data() + pos[t] * rd;
      for (int64_t h = 0; h < heads; ++h) {
        const T* xr = x + t * row + h * head_dim;
        T* yr = y + t * row + h * head_dim;
        if (nt) rotate_row<true>(xr, yr, head_dim, rd, c, s, sg);
        else rotate_row<false>(xr, yr, head_dim, rd, c, s, sg);
      }
    }
    simd::fence_streams(nt);
  });
}

template void rope_apply<float>(const float*, float*, const int64_t*, int64_t, int64_t, int64_t,
                                const RopeTable&, int, core::ThreadPool*);
template void rope_apply<core::bf16>(const core::bf16*, core::bf16*, const int64_t*, int64_t,
                                     int64_t, int64_t, const RopeTable&, int, core::ThreadPool*);

}  // namespace trex::kernels
