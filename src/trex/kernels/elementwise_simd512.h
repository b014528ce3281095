// 16-lane counterparts of elementwise_simd.h for AVX-512 machines, chosen at run time
// (simd::row_isa()): every function carries the target attribute, so the binary still runs on
// an AVX2-only machine, which never calls them. On AVX2 the bf16 paths of the row kernels were
// bound by instructions, not memory: a bf16 load widens in 2 instructions and a store rounds in
// about 10, for 8 lanes; here the same instructions cover 16 lanes. Tails run through the same
// code with masked loads and stores, so an element's value never depends on its column.
// Roundings match elementwise_simd.h: bf16 stores round to nearest even like core::to_bf16, and
// exp16 is exp8's polynomial lane for lane (2^n applied by vscalefps, the same exact product).
// Only included by kernel .cc files.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "trex/core/bf16.h"

#define TREX_AVX512_FN \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) inline

namespace trex::kernels::simd {

// The zero-masked forms with every lane selected are the same instructions as the unmasked ones,
// without the _mm512_undefined_*() operand GCC 12 flags as maybe-uninitialized (see adamw.cc).
inline constexpr __mmask16 kAll16 = 0xffff;

TREX_AVX512_FN __m512 min16(__m512 a, __m512 b) { return _mm512_maskz_min_ps(kAll16, a, b); }
TREX_AVX512_FN __m512 max16(__m512 a, __m512 b) { return _mm512_maskz_max_ps(kAll16, a, b); }
// The lower and upper 8 lanes (GCC 12's _mm512_castps512_ps256 draws the same warning).
TREX_AVX512_FN __m256 low8(__m512 v) { return _mm512_maskz_extractf32x8_ps(0xff, v, 0); }
TREX_AVX512_FN __m256 high8(__m512 v) { return _mm512_maskz_extractf32x8_ps(0xff, v, 1); }

// The lanes of a 16-wide step at column i of a row of n columns.
TREX_AVX512_FN __mmask16 lanes16(int64_t i, int64_t n) {
  return n - i >= 16 ? kAll16 : __mmask16((1u << (n - i)) - 1u);
}

// Loads of a full step are plain loads: k-masked ones cost more on some cores even with every
// lane selected.
TREX_AVX512_FN __m512 load16(const float* p, __mmask16 m) {
  return m == kAll16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
TREX_AVX512_FN __m512 load16(const core::bf16* p, __mmask16 m) {
  // bf16 -> fp32 is exact: widen to 32 bits and shift the 16 bits into the top half.
  __m256i h = m == kAll16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                          : _mm256_maskz_loadu_epi16(m, p);
  __m512i w = _mm512_maskz_cvtepu16_epi32(kAll16, h);
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, w, 16));
}

// fp32 -> 16 bf16 with round-to-nearest-even, NaN kept quiet (elementwise_simd.h's round8).
TREX_AVX512_FN __m256i round16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i absu = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(absu, _mm512_set1_epi32(0x7f800000));
  __m512i hi16 = _mm512_maskz_srli_epi32(kAll16, u, 16);
  __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                  _mm512_and_si512(hi16, _mm512_set1_epi32(1)));
  __m512i r = _mm512_maskz_srli_epi32(kAll16, _mm512_add_epi32(u, bias), 16);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi16, _mm512_set1_epi32(0x40)));
  return _mm512_maskz_cvtepi32_epi16(kAll16, r);  // every lane <= 0xffff: truncation is exact
}

TREX_AVX512_FN void store16(float* p, __m512 v, __mmask16 m) {
  if (m == kAll16) _mm512_storeu_ps(p, v); else _mm512_mask_storeu_ps(p, m, v);
}
TREX_AVX512_FN void store16(core::bf16* p, __m512 v, __mmask16 m) {
  if (m == kAll16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round16(v));
  else _mm256_mask_storeu_epi16(p, m, round16(v));
}

// round16 by the CPU's own conversion where it has AVX512_BF16 (vcvtneps2bf16: round to nearest
// even, a NaN kept quiet the same way, one instruction instead of about ten). It treats denormal
// inputs as zero, unlike core::to_bf16, so a step with any denormal lane (exponent 0, mantissa
// not 0) takes round16; a normal input never rounds to a bf16 denormal. Same bits as round16.
#define TREX_AVX512BF16_FN \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) inline
TREX_AVX512BF16_FN __m256i round16_cvt(__m512 v) {
  // vfpclassps 0x20: the denormal lanes (one instruction for the test of exponent and mantissa).
  if (_mm512_fpclass_ps_mask(v, 0x20)) return round16(v);
  return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
}
// put16 for bf16 through round16_cvt (only where core::cpu_features().avx512_bf16).
template <bool NT>
TREX_AVX512BF16_FN void put16_cvt(core::bf16* p, __m512 v, __mmask16 m) {
  const __m256i h = round16_cvt(v);
  if (m != kAll16) _mm256_mask_storeu_epi16(p, m, h);
  else if constexpr (NT) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h);
  else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
}

// 32 bf16 per step on AVX512_BF16 (one 64-byte line of a tensor): load32 widens one 64-byte
// load by two word permutes (zero-masked: each bf16 lands in the top half of its lane, as
// load16's shift), lo = elements 0-15, hi = 16-31; store32 rounds lo and hi by one
// vcvtne2ps2bf16 and writes the line (NT: two 32-byte streaming stores, the use_streaming
// alignment). Same values and bits as two load16 / put16_cvt steps; a pair with a denormal lane
// rounds through round16 (see round16_cvt). widen_index(0) / (1): load32's permute indices.
TREX_AVX512BF16_FN __m512i widen_index(int half) {
  // Word 2k + 1 of the result takes source word 16 half + k; even words are zeroed by the mask.
  alignas(64) int16_t idx[32];
  for (int k = 0; k < 16; ++k) idx[2 * k] = 0, idx[2 * k + 1] = int16_t(16 * half + k);
  return _mm512_load_si512(idx);
}
TREX_AVX512BF16_FN void load32(const core::bf16* p, __m512i lo_idx, __m512i hi_idx, __m512* lo,
                               __m512* hi) {
  const __m512i v = _mm512_loadu_si512(p);
  *lo = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, lo_idx, v));
  *hi = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, hi_idx, v));
}
template <bool NT>
TREX_AVX512BF16_FN void store16x2(core::bf16* p, __m256i lo, __m256i hi) {
  if constexpr (NT) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), lo);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p + 16), hi);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 16), hi);
  }
}
template <bool NT>
TREX_AVX512BF16_FN void store32(core::bf16* p, __m512 lo, __m512 hi) {
  if (!_kortestz_mask16_u8(_mm512_fpclass_ps_mask(lo, 0x20), _mm512_fpclass_ps_mask(hi, 0x20)))
    return store16x2<NT>(p, round16(lo), round16(hi));
  const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo in the low half
  if constexpr (NT)  // (the zero-masked extracts: GCC 12 flags the unmasked ones, see adamw.cc)
    store16x2<true>(p, _mm512_maskz_extracti64x4_epi64(0xff, h, 0),
                    _mm512_maskz_extracti64x4_epi64(0xff, h, 1));
  else
    _mm512_storeu_si512(p, h);
}

// A line of an element-wise row split by parity instead of halves (the bf16 SwiGLU forward,
// whose lanes never meet): load32_split puts elements 0, 2, ..., 30 in *ev and 1, 3, ..., 31 in
// *od by one shift and one AND of the 64-byte load (each bf16 word in the top half of its
// lane, as load16), two integer operations instead of load32's two word permutes; store32_split
// converts ev and od as store32 does (one vcvtne2ps2bf16, round16 for a pair with a denormal
// lane) and puts the words back in element order by one word permute (split_index()). Same
// values and bits per element as load32 / store32; only a sum across lanes would see the order.
TREX_AVX512BF16_FN void load32_split(const core::bf16* p, __m512* ev, __m512* od) {
  const __m512i v = _mm512_loadu_si512(p);
  *ev = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, v, 16));
  *od = _mm512_castsi512_ps(_mm512_maskz_and_epi32(kAll16, v, _mm512_set1_epi32(int(0xffff0000u))));
}
// Word 2k of the line takes word k of the conversion (ev's lane k), word 2k + 1 word 16 + k.
TREX_AVX512BF16_FN __m512i split_index() {
  alignas(64) int16_t idx[32];
  for (int k = 0; k < 16; ++k) idx[2 * k] = int16_t(k), idx[2 * k + 1] = int16_t(16 + k);
  return _mm512_load_si512(idx);
}
// store32_split's parts, for a caller that converts several lines per step (the SwiGLU
// backward: dg and du): denormal32 is the pair's test for a denormal lane, words32 the line's
// words before the permute, converted by vcvtne2ps2bf16 (Cvt) or by round16 (a pair with a
// denormal lane), put_line writes a line of words by the LineStore below.
TREX_AVX512BF16_FN __mmask16 denormal32(__m512 lo, __m512 hi) {
  return _kor_mask16(_mm512_fpclass_ps_mask(lo, 0x20), _mm512_fpclass_ps_mask(hi, 0x20));
}
template <bool Cvt>
TREX_AVX512BF16_FN __m512i words32(__m512 lo, __m512 hi) {
  if constexpr (Cvt) return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo low
  else  // (zero-masked: GCC 12 flags the unmasked insert and zext, see adamw.cc; the cast's upper half is replaced)
    return _mm512_maskz_inserti64x4(0xff, _mm512_castsi256_si512(round16(lo)), round16(hi), 1);
}
// How a line's 64 bytes are written: one plain store; two 32-byte streaming stores (the
// use_streaming alignment); or, where the line starts on a 64-byte boundary, one 64-byte
// streaming store (one instruction instead of an extract and two stores).
enum class LineStore { kPlain, kStream32, kStream64 };
template <LineStore S>
TREX_AVX512BF16_FN void put_line(core::bf16* p, __m512i h) {
  if constexpr (S == LineStore::kStream64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), h);
  else if constexpr (S == LineStore::kStream32)  // (zero-masked extracts: see store32)
    store16x2<true>(p, _mm512_maskz_extracti64x4_epi64(0xff, h, 0),
                    _mm512_maskz_extracti64x4_epi64(0xff, h, 1));
  else
    _mm512_storeu_si512(p, h);
}
template <LineStore S>
TREX_AVX512BF16_FN void store32_split(core::bf16* p, __m512 ev, __m512 od, __m512i idx) {
  const __m512i h = _kortestz_mask16_u8(_mm512_fpclass_ps_mask(ev, 0x20), _mm512_fpclass_ps_mask(od, 0x20))
                        ? words32<true>(ev, od)
                        : words32<false>(ev, od);
  put_line<S>(p, _mm512_maskz_permutexvar_epi16(0xffffffffu, idx, h));
}

// Non-temporal stores of a full step (use_streaming's 32-byte alignment: two 256-bit halves for
// fp32, one for bf16); a partial step falls back to a masked normal store.
TREX_AVX512_FN void stream16(float* p, __m512 v, __mmask16 m) {
  if (m != kAll16) return store16(p, v, m);
  _mm256_stream_ps(p, low8(v));
  _mm256_stream_ps(p + 8, high8(v));
}
TREX_AVX512_FN void stream16(core::bf16* p, __m512 v, __mmask16 m) {
  if (m != kAll16) return store16(p, v, m);
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), round16(v));
}

template <bool NT, class T>
TREX_AVX512_FN void put16(T* p, __m512 v, __mmask16 m) {
  if constexpr (NT) stream16(p, v, m); else store16(p, v, m);
}

// exp16's reduction and polynomial for x already within [-87, 88] (a caller that knows one side
// of the clamp holds, e.g. x - max <= 0, skips that instruction and keeps the bits).
TREX_AVX512_FN __m512 exp16_clamped(__m512 x) {
  __m512 xl = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  __m512 n = _mm512_maskz_roundscale_ps(kAll16, xl, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  // n is an integer in [-126, 127]: y 2^n, one rounding, as exp8's multiply by 2^n's bits.
  return _mm512_maskz_scalef_ps(kAll16, y, n);
}

// exp8 of elementwise_simd.h on 16 lanes: the same clamp, reduction and polynomial.
TREX_AVX512_FN __m512 exp16(__m512 x) {
  return exp16_clamped(min16(max16(x, _mm512_set1_ps(-87.f)), _mm512_set1_ps(88.f)));
}

TREX_AVX512_FN float hsum16(__m512 v) {
  // Halves to 8 lanes first, then hsum's order.
  __m256 s8 = _mm256_add_ps(low8(v), high8(v));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace trex::kernels::simd
