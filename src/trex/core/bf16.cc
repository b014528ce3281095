#include "trex/core/bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "trex/core/bf16_avx512.h"
#include "trex/core/bf16_stream.h"
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

// AVX-512 paths, 32 elements (one 64-byte line of bf16) per step. The AVX2 conversion costs
// about 1.4 instructions per element and the casts ran at 60-64% of the triad on two cores, the
// instructions not hidden behind the memory; here fp32 -> bf16 costs about 0.25 per element.
namespace {

#define TREX_BF16_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define TREX_BF16_AVX512BF16_FN \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

// round_to_bf16_avx2 on 16 lanes: bit patterns in the low halves of 32-bit lanes. (Zero-masked
// shifts with every lane selected: GCC 12 flags the unmasked ones as maybe-uninitialized.)
TREX_BF16_AVX512_FN __m512i round_to_bf16_avx512(__m512i u) {
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                   _mm512_set1_epi32(0x7f800000));
  const __m512i hi = _mm512_maskz_srli_epi32(0xffff, u, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_srli_epi32(
      0xffff, _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  return _mm512_mask_or_epi32(rounded, is_nan, hi, _mm512_set1_epi32(0x0040));
}

// Two 16-lane results (low halves of 32-bit lanes) as 32 bf16 in order: a's then b's.
TREX_BF16_AVX512_FN __m512i pack_bf16x32(__m512i a, __m512i b) {
  alignas(64) static const int16_t kEven[32] = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20,
                                                22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42,
                                                44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
  return _mm512_permutex2var_epi16(a, _mm512_load_si512(kEven), b);
}

// One 64-byte line of output: a streaming store (NT, the address 64-byte aligned) or a plain one.
template <bool NT>
TREX_BF16_AVX512_FN void put_line(void* p, __m512i v) {
  if constexpr (NT) _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
  else _mm512_storeu_si512(p, v);
}

// Elements before dst reaches a 64-byte boundary (NT: the streamed steps need aligned lines;
// they go through the scalar path). At most 31 (bf16) or 15 (fp32).
template <bool NT, class T>
size_t unaligned_head(const T* dst, size_t n) {
  if constexpr (!NT) return 0;
  const size_t mis = reinterpret_cast<uintptr_t>(dst) % 64;
  if (mis == 0 || mis % sizeof(T) != 0) return mis == 0 ? 0 : n;  // odd address: no streaming
  return std::min(n, (64 - mis) / sizeof(T));
}

template <bool NT>
TREX_BF16_AVX512_FN void fp32_to_bf16_avx512_int(const float* src, bf16* dst, size_t n) {
  size_t i = unaligned_head<NT>(dst, n);
  fp32_to_bf16_scalar(src, dst, i);
  for (; i + 32 <= n; i += 32) {
    const __m512i a = round_to_bf16_avx512(_mm512_loadu_si512(src + i));
    const __m512i b = round_to_bf16_avx512(_mm512_loadu_si512(src + i + 16));
    put_line<NT>(dst + i, pack_bf16x32(a, b));
  }
  fp32_to_bf16_scalar(src + i, dst + i, n - i);
}

// vcvtne2ps2bf16 rounds to nearest even and quiets a NaN as to_bf16 does, but reads denormal
// inputs as zero: a step with a denormal input (vfpclassps 0x20) takes the integer rounding.
template <bool NT>
TREX_BF16_AVX512BF16_FN void fp32_to_bf16_avx512_cvt(const float* src, bf16* dst, size_t n) {
  size_t i = unaligned_head<NT>(dst, n);
  fp32_to_bf16_scalar(src, dst, i);
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
    __m512i h;
    if (_kortestz_mask16_u8(_mm512_fpclass_ps_mask(a, 0x20), _mm512_fpclass_ps_mask(b, 0x20)))
      h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));  // a in the low half
    else
      h = pack_bf16x32(round_to_bf16_avx512(_mm512_castps_si512(a)),
                       round_to_bf16_avx512(_mm512_castps_si512(b)));
    put_line<NT>(dst + i, h);
  }
  fp32_to_bf16_scalar(src + i, dst + i, n - i);
}

template <bool NT>
void fp32_to_bf16_wide(const float* src, bf16* dst, size_t n) {
  if (cpu_features().avx512_bf16) fp32_to_bf16_avx512_cvt<NT>(src, dst, n);
  else fp32_to_bf16_avx512_int<NT>(src, dst, n);
  if constexpr (NT) _mm_sfence();
}

template <bool NT>
TREX_BF16_AVX512_FN void bf16_to_fp32_wide(const bf16* src, float* dst, size_t n) {
  // Word 2k + 1 of a result takes source word 16 half + k, even words are zeroed: each bf16
  // lands in the top half of its 32-bit lane, the exact widening.
  alignas(64) int16_t idx[2][32];
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 16; ++k) idx[half][2 * k] = 0, idx[half][2 * k + 1] = int16_t(16 * half + k);
  const __m512i lo_idx = _mm512_load_si512(idx[0]), hi_idx = _mm512_load_si512(idx[1]);
  size_t i = unaligned_head<NT>(dst, n);
  bf16_to_fp32_scalar(src, dst, i);
  for (; i + 32 <= n; i += 32) {
    const __m512i v = _mm512_loadu_si512(src + i);
    put_line<NT>(dst + i, _mm512_maskz_permutexvar_epi16(0xaaaaaaaau, lo_idx, v));
    put_line<NT>(dst + i + 16, _mm512_maskz_permutexvar_epi16(0xaaaaaaaau, hi_idx, v));
  }
  bf16_to_fp32_scalar(src + i, dst + i, n - i);
  if constexpr (NT) _mm_sfence();
}

}  // namespace

void fp32_to_bf16_avx512(const float* src, bf16* dst, size_t n) { fp32_to_bf16_wide<false>(src, dst, n); }
void bf16_to_fp32_avx512(const bf16* src, float* dst, size_t n) { bf16_to_fp32_wide<false>(src, dst, n); }

// Streaming stores only on the AVX-512 paths (the ones that run on the machines measured);
// elsewhere the plain conversion, the same bits either way.
void fp32_to_bf16_stream(const float* src, bf16* dst, size_t n) {
  if (best_isa() >= Isa::kAvx512) fp32_to_bf16_wide<true>(src, dst, n);
  else fp32_to_bf16(src, dst, n);
}
void bf16_to_fp32_stream(const bf16* src, float* dst, size_t n) {
  if (best_isa() >= Isa::kAvx512) bf16_to_fp32_wide<true>(src, dst, n);
  else bf16_to_fp32(src, dst, n);
}

void fp32_to_bf16(const float* src, bf16* dst, size_t n) {
  if (best_isa() >= Isa::kAvx512)
    fp32_to_bf16_avx512(src, dst, n);
  else if (best_isa() >= Isa::kAvx2)
    fp32_to_bf16_avx2(src, dst, n);
  else
    fp32_to_bf16_scalar(src, dst, n);
}

void bf16_to_fp32(const bf16* src, float* dst, size_t n) {
  if (best_isa() >= Isa::kAvx512)
    bf16_to_fp32_avx512(src, dst, n);
  else if (best_isa() >= Isa::kAvx2)
    bf16_to_fp32_avx2(src, dst, n);
  else
    bf16_to_fp32_scalar(src, dst, n);
}

}  // namespace trex::core
