// bfloat16: the top 16 bits of an IEEE fp32 (1 sign, 8 exponent, 7 mantissa bits).
//
// fp32 -> bf16 rounds to nearest, ties to even, on the bits: finite values that round past the
// largest bf16 become infinity, denormals round like any other value (no flush to zero), and a
// NaN stays a NaN of the same sign with the quiet bit set (its payload's top bits kept), so
// rounding can never turn a NaN into an infinity. bf16 -> fp32 is exact (append 16 zero bits).
//
// The bulk conversions pick the widest supported path at run time (best_isa(), TREX_ISA
// forces a lower one); every path gives bit-identical results to the scalar one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trex::core {

struct bf16 {
  uint16_t bits = 0;
};

inline uint32_t fp32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float fp32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline bf16 to_bf16(float f) {
  uint32_t u = fp32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x0040u)};
  // Adding 0x7fff plus the lowest kept bit carries into the kept bits exactly when the dropped
  // half is above one half, or equal to it with an odd kept part (ties to even).
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t(u >> 16)};
}

inline float to_float(bf16 h) { return fp32_from_bits(uint32_t(h.bits) << 16); }

// dst[i] = to_bf16(src[i]) for i < n; src and dst must not overlap.
void fp32_to_bf16(const float* src, bf16* dst, size_t n);
// dst[i] = to_float(src[i]) for i < n; src and dst must not overlap.
void bf16_to_fp32(const bf16* src, float* dst, size_t n);

// The individual paths, for tests and benchmarks. The AVX2 ones REQUIRE isa_supported(kAvx2).
void fp32_to_bf16_scalar(const float* src, bf16* dst, size_t n);
void bf16_to_fp32_scalar(const bf16* src, float* dst, size_t n);
void fp32_to_bf16_avx2(const float* src, bf16* dst, size_t n);
void bf16_to_fp32_avx2(const bf16* src, float* dst, size_t n);

}  // namespace trex::core
