// The logarithm of the sparse attention softmax's normalisers (sparse_attention.cc: lse = max +
// log(sum)), 8 at a time. A header of its own so that its accuracy bound has a unit test
// (tests/kernels/sparse_attention_log_test.cc); the kernel is its only caller.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__AVX512F__) && defined(__AVX512VL__)
#include <immintrin.h>

#define TREX_ATTN_HAVE_LOG8 1

namespace trex::kernels::attn_detail {

// log z for 8 finite z >= 1 (a softmax normaliser: its largest term is exp(0) = 1), within 2
// ulp of log (tested: every float in [1, 4), the binade edges and a geometric sweep to FLT_MAX
// against a double log; libm's logf is within 0.82 there). z = x 2^E with x in [0.75, 1.5)
// (getmant; E = getexp(z) - getexp(x), exact); log x = 2 atanh(s), s = (x - 1) / (x + 1),
// |s| <= 0.2, as 2 s (1 + s^2 / 3 + ... + s^12 / 13) (the next term is below 2^-34 of the sum);
// plus E ln 2 in two parts (exp8's split; the high part's product is exact for |E| <= 128).
// Exactly 0 at z = 1 (x = 1, E = 0: s = 0). Replaced 8 scalar logf calls per 8 heads of a token
// (session 22: logf had been 0.6-1.6% of a forward profile).
inline __m256 log8_from_one(__m256 z) {
  const __m256 x = _mm256_getmant_ps(z, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_src);
  const __m256 E = _mm256_sub_ps(_mm256_getexp_ps(z), _mm256_getexp_ps(x));
  const __m256 f = _mm256_sub_ps(x, _mm256_set1_ps(1.f));
  const __m256 sv = _mm256_div_ps(f, _mm256_add_ps(x, _mm256_set1_ps(1.f)));
  const __m256 s2 = _mm256_mul_ps(sv, sv);
  __m256 p = _mm256_set1_ps(1.f / 13);
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.f / 11));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.f / 9));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.f / 7));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.f / 5));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.f / 3));
  const __m256 two_s = _mm256_add_ps(sv, sv);
  const __m256 logx = _mm256_fmadd_ps(_mm256_mul_ps(two_s, s2), p, two_s);
  const __m256 lo = _mm256_fmadd_ps(E, _mm256_set1_ps(-2.12194440e-4f), logx);
  return _mm256_fmadd_ps(E, _mm256_set1_ps(0.693359375f), lo);
}

}  // namespace trex::kernels::attn_detail
#endif
