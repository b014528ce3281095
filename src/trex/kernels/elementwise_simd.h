// Loads and stores of 8 lanes of float or bf16 as fp32 registers, for the elementwise kernels
// (rmsnorm, swiglu, rope): storage type is a template parameter, arithmetic is always fp32.
// The bf16 store rounds to nearest even exactly like core::to_bf16 (NaN stays a quiet NaN), so
// a fused kernel and the reference round identically. Only included by kernel .cc files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "trex/core/bf16.h"
#include "trex/kernels/tuning_builtins.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TREX_ELEM_AVX2 1
#endif

namespace trex::kernels::simd {

inline float ld(const float* p) { return *p; }
inline float ld(const core::bf16* p) { return core::to_float(*p); }
inline void st(float* p, float v) { *p = v; }
inline void st(core::bf16* p, float v) { *p = core::to_bf16(v); }

#ifdef TREX_ELEM_AVX2
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const core::bf16* p) {
  // bf16 -> fp32 is exact: widen to 32 bits and shift the 16 bits into the top half.
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline void store8(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
// fp32 -> 8 bf16 with round-to-nearest-even, as 128 bits.
inline __m128i round8(__m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000));
  __m256i hi16 = _mm256_srli_epi32(u, 16);
  // Same carry trick as core::to_bf16: + 0x7fff + lowest kept bit rounds half to even.
  __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                  _mm256_and_si256(hi16, _mm256_set1_epi32(1)));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(hi16, _mm256_set1_epi32(0x40)), nan);
  // Every lane is in [0, 0xffff], so the unsigned-saturating pack is exact.
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
inline void store8(core::bf16* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), round8(v));
}

// Non-temporal stores, for outputs far larger than the caches: they skip the read that a normal
// store's write-allocate does (a third of a copy's traffic). REQUIRE 32-byte (fp32) or 16-byte
// (bf16) aligned p; the caller issues _mm_sfence() before other threads read the output.
inline void stream8(float* p, __m256 v) { _mm256_stream_ps(p, v); }
inline void stream8(core::bf16* p, __m256 v) {
  _mm_stream_si128(reinterpret_cast<__m128i*>(p), round8(v));
}

// store8 or stream8, chosen at compile time.
template <bool NT, class T>
inline void put8(T* p, __m256 v) {
  if constexpr (NT) stream8(p, v); else store8(p, v);
}

// exp(x) for 8 lanes: Cephes expf (range reduction by ln 2 in two parts, degree-6 polynomial),
// relative error about 2 ulp. x is clamped to [-87, 88] so 2^n stays a normal float; below -87
// the result is ~1e-38 instead of 0 (for sigma that changes silu by less than 1e-36 absolute).
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.f)), _mm256_set1_ps(88.f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  e = _mm256_slli_epi32(e, 23);  // 2^n as a float's bits
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

// Whether outputs of n elements of T at these pointers should be streamed: only when they are
// much larger than the last-level cache (a consumer would not find them in cache anyway) and
// every row of `row` elements starts on a 32-byte boundary, so the SIMD body covers each row.
// mode is the tuned "stream" parameter: 0 by size (above), 1 never, 2 whenever aligned.
template <class T>
bool use_streaming(int64_t n, int64_t row, std::initializer_list<const void*> outs, int64_t mode = 0) {
#ifdef TREX_ELEM_AVX2
  if (mode == 1) return false;
  if (mode == 0 && !builtin::streams_by_size(n * int64_t(sizeof(T)))) return false;
  if ((size_t(row) * sizeof(T)) % 32 != 0) return false;
  for (const void* p : outs)
    if (reinterpret_cast<uintptr_t>(p) % 32 != 0) return false;
  return true;
#else
  return false;
#endif
}

inline void fence_streams(bool nt) {
#ifdef TREX_ELEM_AVX2
  if (nt) _mm_sfence();
#endif
}

}  // namespace trex::kernels::simd
