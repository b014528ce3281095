#include "trex/core/bf16.h"

#include <immintrin.h>

#include "trex/core/cpu_features.h"

namespace trex::core {

void fp32_to_bf16_scalar(const float* src, bf16* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void bf16_to_fp32_scalar(const bf16* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = to_float(src[i]);
}

namespace {

// Eight floats to eight bf16 bit patterns held in the low halves of 32-bit lanes; the same
// arithmetic as to_bf16.
__attribute__((target("avx2"))) __m256i round_to_bf16_avx2(__m256i u) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  rounded = _mm256_srli_epi32(rounded, 16);
  __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

}  // namespace

__attribute__((target("avx2"))) void fp32_to_bf16_avx2(const float* src, bf16* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = round_to_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    __m256i b = round_to_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
    // packus works per 128-bit lane (a0-3 b0-3 a4-7 b4-7); the permute restores the order.
    // Values are at most 0xffff, so the unsigned saturation never clips.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  fp32_to_bf16_scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx2"))) void bf16_to_fp32_avx2(const bf16* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), u);
  }
  bf16_to_fp32_scalar(src + i, dst + i, n - i);
}

void fp32_to_bf16(const float* src, bf16* dst, size_t n) {
  if (best_isa() >= Isa::kAvx2)
    fp32_to_bf16_avx2(src, dst, n);
  else
    fp32_to_bf16_scalar(src, dst, n);
}

void bf16_to_fp32(const bf16* src, float* dst, size_t n) {
  if (best_isa() >= Isa::kAvx2)
    bf16_to_fp32_avx2(src, dst, n);
  else
    bf16_to_fp32_scalar(src, dst, n);
}

}  // namespace trex::core
