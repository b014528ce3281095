#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/bf16_avx512.h"
#include "trex/core/bf16_stream.h"
#include "trex/core/cpu_features.h"
#include "trex/core/cpu_features_override.h"

namespace trex::core {
namespace {

uint16_t round_bits(uint32_t fp32) { return to_bf16(fp32_from_bits(fp32)).bits; }

bool is_nan_bf16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0; }

TEST(Bf16, TiesRoundToEven) {
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3f80, even) and 1.0078125 (0x3f81, odd).
  EXPECT_EQ(round_bits(0x3f808000), 0x3f80);
  // Halfway between 0x3f81 (odd) and 0x3f82 (even): up.
  EXPECT_EQ(round_bits(0x3f818000), 0x3f82);
  EXPECT_EQ(round_bits(0xbf808000), 0xbf80);  // negative: the magnitude rounds the same way
  EXPECT_EQ(round_bits(0xbf818000), 0xbf82);
  // Just off the tie goes to the nearer neighbour.
  EXPECT_EQ(round_bits(0x3f807fff), 0x3f80);
  EXPECT_EQ(round_bits(0x3f808001), 0x3f81);
  // A tie whose rounding carries into the exponent: 0x3fff (odd) + 1/2 ulp -> 0x4000.
  EXPECT_EQ(round_bits(0x3fff8000), 0x4000);
  EXPECT_EQ(to_float(to_bf16(1.00390625f)), 1.0f);
}

TEST(Bf16, ExactValuesAndZeros) {
  for (float f : {0.0f, 1.0f, -2.0f, 0.5f, 3.0f, 65536.0f, -0.15625f})
    EXPECT_EQ(to_float(to_bf16(f)), f) << f;
  EXPECT_EQ(to_bf16(0.0f).bits, 0x0000);
  EXPECT_EQ(to_bf16(-0.0f).bits, 0x8000);
}

TEST(Bf16, InfinityAndOverflow) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(to_bf16(inf).bits, 0x7f80);
  EXPECT_EQ(to_bf16(-inf).bits, 0xff80);
  // The largest float is above the largest bf16 by more than half an ulp: infinity.
  EXPECT_EQ(round_bits(0x7f7fffff), 0x7f80);
  EXPECT_EQ(round_bits(0xff7fffff), 0xff80);
  // Below the tie with the largest bf16 (0x7f7f): stays finite.
  EXPECT_EQ(round_bits(0x7f7f7fff), 0x7f7f);
  EXPECT_TRUE(std::isinf(to_float(bf16{0x7f80})));
}

TEST(Bf16, NanStaysQuietNan) {
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::quiet_NaN()).bits & 0x7fc0, 0x7fc0);
  // Signalling NaNs whose payload lives only in the dropped bits must not become infinity.
  EXPECT_EQ(round_bits(0x7f800001), 0x7fc0);
  EXPECT_EQ(round_bits(0xff800001), 0xffc0);
  EXPECT_EQ(round_bits(0x7f80ffff), 0x7fc0);
  // Payload bits that fit are kept; the all-ones payload must not carry into the sign.
  EXPECT_EQ(round_bits(0x7fffffff), 0x7fff);
  EXPECT_EQ(round_bits(0xffffffff), 0xffff);
  EXPECT_EQ(round_bits(0x7fa00000), 0x7fe0);
  EXPECT_TRUE(std::isnan(to_float(to_bf16(std::nanf("")))));
}

TEST(Bf16, DenormalsRoundLikeAnyValue) {
  EXPECT_EQ(round_bits(0x00000001), 0x0000);  // smallest fp32 denormal: far below half a bf16 ulp
  EXPECT_EQ(round_bits(0x00010000), 0x0001);  // smallest bf16 denormal, exact
  EXPECT_EQ(round_bits(0x00008000), 0x0000);  // tie with even 0
  EXPECT_EQ(round_bits(0x00018000), 0x0002);  // tie between 1 (odd) and 2
  EXPECT_EQ(round_bits(0x00008001), 0x0001);
  EXPECT_EQ(round_bits(0x807fffff), 0x8080);  // largest denormal rounds up to the smallest normal
  EXPECT_EQ(round_bits(0x007f0000), 0x007f);
  EXPECT_GT(to_float(bf16{0x0001}), 0.0f);  // never flushed to zero
}

TEST(Bf16, EveryBf16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    bf16 x{uint16_t(h)};
    uint16_t back = to_bf16(to_float(x)).bits;
    if (is_nan_bf16(uint16_t(h)))
      EXPECT_EQ(back, uint16_t(h | 0x0040)) << std::hex << h;  // quieted, sign and payload kept
    else
      ASSERT_EQ(back, h) << std::hex << h;
  }
}

// Bit patterns that exercise every branch: ties, near-ties, NaNs, infinities, denormals.
std::vector<uint32_t> interesting_patterns() {
  std::vector<uint32_t> v;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t exp : {0x00u, 0x01u, 0x7fu, 0xfeu, 0xffu})
      for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
        for (uint32_t kept : {0x00u, 0x01u, 0x40u, 0x7fu})
          v.push_back(sign | (exp << 23) | (kept << 16) | low);
  return v;
}

TEST(Bf16, VectorPathEqualsScalarPath) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<uint32_t> bits = interesting_patterns();
  std::mt19937 rng(5);
  for (int i = 0; i < 1 << 20; ++i) bits.push_back(uint32_t(rng()));
  std::vector<float> src(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) src[i] = fp32_from_bits(bits[i]);
  std::vector<bf16> scalar(src.size()), vec(src.size()), dispatched(src.size());
  fp32_to_bf16_scalar(src.data(), scalar.data(), src.size());
  fp32_to_bf16_avx2(src.data(), vec.data(), src.size());
  fp32_to_bf16(src.data(), dispatched.data(), src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(vec[i].bits, scalar[i].bits) << "input 0x" << std::hex << bits[i];
    ASSERT_EQ(dispatched[i].bits, scalar[i].bits) << "input 0x" << std::hex << bits[i];
  }
}

// The AVX-512 paths: the CPU's conversion where it has AVX512_BF16 (denormal inputs through the
// integer rounding), the integer rounding without it (cpu_features() cleared by the test-only
// override), both against the scalar path on every interesting pattern, random bits, a run of
// denormals only, and starts off a 64-byte boundary.
void expect_avx512_equals_scalar() {
  std::vector<uint32_t> bits = interesting_patterns();
  std::mt19937 rng(7);
  for (int i = 0; i < 1 << 20; ++i) bits.push_back(uint32_t(rng()));
  for (int i = 0; i < 4096; ++i) bits.push_back(uint32_t(rng()) & 0x807fffffu);  // denormals
  std::vector<float> src(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) src[i] = fp32_from_bits(bits[i]);
  for (size_t off : {size_t(0), size_t(1), size_t(3)}) {
    const size_t n = src.size() - off - 5;  // a tail, and 5 guard elements past it
    std::vector<bf16> scalar(src.size(), bf16{0xdead}), vec(src.size(), bf16{0xdead}),
        dispatched(src.size(), bf16{0xdead});
    fp32_to_bf16_scalar(src.data() + off, scalar.data() + off, n);
    fp32_to_bf16_avx512(src.data() + off, vec.data() + off, n);
    fp32_to_bf16(src.data() + off, dispatched.data() + off, n);
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(vec[i].bits, scalar[i].bits) << "off " << off << " input 0x" << std::hex << bits[i];
      ASSERT_EQ(dispatched[i].bits, scalar[i].bits) << "off " << off << " input 0x" << std::hex << bits[i];
    }
  }
}

TEST(Bf16, Avx512PathEqualsScalarPath) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_avx512_equals_scalar();
  if (!cpu_features().avx512_bf16) return;  // the run above took the integer rounding
  CpuFeatures no_bf16 = cpu_features();
  no_bf16.avx512_bf16 = false;
  ScopedCpuFeaturesForTest features(no_bf16);
  ASSERT_FALSE(cpu_features().avx512_bf16);
  expect_avx512_equals_scalar();
}

TEST(Bf16, Avx512PathHandlesEveryTailLength) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::vector<float> src(100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 1.0f + float(i) * 0.00390625f;
  for (size_t n = 0; n <= 96; ++n) {
    std::vector<bf16> scalar(n + 1, bf16{0xdead}), vec(n + 1, bf16{0xdead});
    fp32_to_bf16_scalar(src.data(), scalar.data(), n);
    fp32_to_bf16_avx512(src.data(), vec.data(), n);
    for (size_t i = 0; i <= n; ++i) ASSERT_EQ(vec[i].bits, scalar[i].bits) << "n " << n << " i " << i;
    std::vector<float> back_s(n + 1, -7.0f), back_v(n + 1, -7.0f);
    bf16_to_fp32_scalar(scalar.data(), back_s.data(), n);
    bf16_to_fp32_avx512(scalar.data(), back_v.data(), n);
    for (size_t i = 0; i <= n; ++i)
      ASSERT_EQ(fp32_bits(back_v[i]), fp32_bits(back_s[i])) << "n " << n << " i " << i;
  }
}

// The streaming conversions: every length up to three lines past a 64-byte boundary, from every
// element offset of the output within a line (the scalar head before the first aligned line),
// give the scalar path's bits and leave the guard elements either side untouched.
void expect_stream_equals_scalar() {
  std::vector<float> src(200);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = (i % 7 == 3 ? -1.0f : 1.0f) * (1.0f + float(i) * 0.00390625f) * (i % 11 == 5 ? 1e-39f : 1.0f);
  src[17] = std::numeric_limits<float>::quiet_NaN();
  src[40] = std::numeric_limits<float>::infinity();
  alignas(64) bf16 out16[256];
  alignas(64) float out32[256];
  for (size_t off = 0; off < 32; ++off)
    for (size_t n = 0; n <= 130; ++n) {
      std::vector<bf16> want(n);
      fp32_to_bf16_scalar(src.data(), want.data(), n);
      std::fill(out16, out16 + 256, bf16{0xdead});
      fp32_to_bf16_stream(src.data(), out16 + 1 + off, n);
      ASSERT_EQ(out16[off].bits, 0xdead) << "off " << off << " n " << n;
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(out16[1 + off + i].bits, want[i].bits) << "off " << off << " n " << n << " i " << i;
      ASSERT_EQ(out16[1 + off + n].bits, 0xdead) << "off " << off << " n " << n;

      std::vector<float> back(n);
      bf16_to_fp32_scalar(want.data(), back.data(), n);
      std::fill(out32, out32 + 256, -7.0f);
      bf16_to_fp32_stream(want.data(), out32 + 1 + off % 16, n);
      ASSERT_EQ(out32[off % 16], -7.0f) << "off " << off << " n " << n;
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(fp32_bits(out32[1 + off % 16 + i]), fp32_bits(back[i])) << "off " << off << " n " << n << " i " << i;
      ASSERT_EQ(out32[1 + off % 16 + n], -7.0f) << "off " << off << " n " << n;
    }
}

TEST(Bf16, StreamingPathEqualsScalarPathAtEveryOffsetAndLength) {
  expect_stream_equals_scalar();
  if (!cpu_features().avx512_bf16) return;  // the run above took the integer rounding
  CpuFeatures no_bf16 = cpu_features();
  no_bf16.avx512_bf16 = false;
  ScopedCpuFeaturesForTest features(no_bf16);
  expect_stream_equals_scalar();
}

TEST(Bf16, VectorPathHandlesEveryTailLength) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<float> src(40);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 1.0f + float(i) * 0.00390625f;
  for (size_t n = 0; n <= src.size(); ++n) {
    // One guard element past n must stay untouched.
    std::vector<bf16> scalar(n + 1, bf16{0xdead}), vec(n + 1, bf16{0xdead});
    fp32_to_bf16_scalar(src.data(), scalar.data(), n);
    fp32_to_bf16_avx2(src.data(), vec.data(), n);
    for (size_t i = 0; i <= n; ++i) ASSERT_EQ(vec[i].bits, scalar[i].bits) << "n " << n << " i " << i;
    std::vector<float> back_s(n + 1, -7.0f), back_v(n + 1, -7.0f);
    bf16_to_fp32_scalar(scalar.data(), back_s.data(), n);
    bf16_to_fp32_avx2(scalar.data(), back_v.data(), n);
    for (size_t i = 0; i <= n; ++i)
      ASSERT_EQ(fp32_bits(back_v[i]), fp32_bits(back_s[i])) << "n " << n << " i " << i;
  }
}

TEST(Bf16, WideningIsExactOnEveryPath) {
  std::vector<bf16> all(65536);
  for (uint32_t h = 0; h <= 0xffff; ++h) all[h] = bf16{uint16_t(h)};
  std::vector<float> scalar(all.size()), dispatched(all.size());
  bf16_to_fp32_scalar(all.data(), scalar.data(), all.size());
  bf16_to_fp32(all.data(), dispatched.data(), all.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    ASSERT_EQ(fp32_bits(scalar[h]), h << 16);
    ASSERT_EQ(fp32_bits(dispatched[h]), h << 16);
  }
  if (isa_supported(Isa::kAvx2)) {
    std::vector<float> vec(all.size());
    bf16_to_fp32_avx2(all.data(), vec.data(), all.size());
    for (uint32_t h = 0; h <= 0xffff; ++h) ASSERT_EQ(fp32_bits(vec[h]), h << 16);
  }
  if (isa_supported(Isa::kAvx512)) {
    std::vector<float> vec(all.size());
    bf16_to_fp32_avx512(all.data(), vec.data(), all.size());
    for (uint32_t h = 0; h <= 0xffff; ++h) ASSERT_EQ(fp32_bits(vec[h]), h << 16);
  }
}

}  // namespace
}  // namespace trex::core
