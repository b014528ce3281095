// log8_from_one (sparse_attention_log.h), the sparse attention softmax's log of its normalisers
// z >= 1, against a double log: within 2 ulp of the result on every float in [1, 4) (the
// binades a softmax of a few to a few hundred terms lands in), on the edges of its range
// reduction (getmant's switch at x = 1.5, powers of two) and on a geometric sweep from 4 to
// FLT_MAX; exactly 0 at z = 1 (a row whose only term is its maximum has lse = max). The ulp is
// that of the float nearest the double result, so a result near 0 is held to its own tiny ulp.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trex/kernels/sparse_attention_log.h"

namespace trex::kernels::attn_detail {
namespace {

#ifdef TREX_ATTN_HAVE_LOG8

// |got - log z| in ulps of the float nearest log z (log z > 0 here; 0 only at z = 1).
double ulp_error(float z, float got) {
  const double ref = std::log(double(z));
  if (ref == 0.0) return got == 0.f ? 0.0 : INFINITY;
  const double ulp = std::ldexp(1.0, std::ilogb(float(ref)) - 23);
  return std::fabs(double(got) - ref) / ulp;
}

struct Worst {
  double err = 0;
  float z = 0;
};

// Runs log8_from_one on zs 8 at a time (the last group padded with 1) and returns the worst error.
Worst worst_of(const std::vector<float>& zs) {
  Worst w;
  alignas(32) float in[8], out[8];
  for (size_t i = 0; i < zs.size(); i += 8) {
    for (size_t l = 0; l < 8; ++l) in[l] = i + l < zs.size() ? zs[i + l] : 1.f;
    _mm256_store_ps(out, log8_from_one(_mm256_load_ps(in)));
    for (size_t l = 0; l < 8 && i + l < zs.size(); ++l) {
      const double e = ulp_error(in[l], out[l]);
      if (!(e <= w.err)) w = {e, in[l]};  // a NaN result counts as the worst
    }
  }
  return w;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(SparseAttentionLog, EveryFloatInOneToFourWithinTwoUlp) {
  std::vector<float> zs;
  zs.reserve(size_t(1) << 24);
  for (uint32_t b = bits_of(1.f); b < bits_of(4.f); ++b) zs.push_back(from_bits(b));
  ASSERT_EQ(zs.size(), size_t(1) << 24);  // two binades of 2^23 floats
  const Worst w = worst_of(zs);
  std::printf("log8_from_one over [1, 4): worst %.3f ulp at z = %.9g\n", w.err, double(w.z));
  EXPECT_LE(w.err, 2.0) << "at z = " << w.z;
}

TEST(SparseAttentionLog, ExactlyZeroAtOne) {
  alignas(32) float out[8];
  _mm256_store_ps(out, log8_from_one(_mm256_set1_ps(1.f)));
  for (float v : out) EXPECT_EQ(bits_of(v), 0u) << "log 1 = " << v << ", not +0";
}

TEST(SparseAttentionLog, RangeReductionEdgesWithinTwoUlp) {
  // Each edge and its float neighbours: 1.5 2^k (getmant's x wraps from just below 1.5 to 0.75),
  // 2^k (E steps), and the top of the range.
  std::vector<float> zs;
  for (int k = 0; k <= 127; ++k)
    for (float edge : {std::ldexp(1.f, k), std::ldexp(1.5f, k)}) {
      if (!std::isfinite(edge)) continue;
      zs.push_back(edge);
      zs.push_back(std::nextafter(edge, 0.f));
      zs.push_back(std::nextafter(edge, INFINITY));
    }
  zs.push_back(FLT_MAX);
  std::vector<float> in_range;
  for (float z : zs)
    if (z >= 1.f && std::isfinite(z)) in_range.push_back(z);
  const Worst w = worst_of(in_range);
  std::printf("log8_from_one at %zu edges: worst %.3f ulp at z = %.9g\n", in_range.size(), w.err,
              double(w.z));
  EXPECT_LE(w.err, 2.0) << "at z = " << w.z;
}

TEST(SparseAttentionLog, GeometricSweepToFltMaxWithinTwoUlp) {
  std::vector<float> zs;
  for (double z = 4.0; z < double(FLT_MAX); z *= 1.0001) zs.push_back(float(z));
  ASSERT_GT(zs.size(), size_t(800000));
  const Worst w = worst_of(zs);
  std::printf("log8_from_one over [4, FLT_MAX) (%zu points): worst %.3f ulp at z = %.9g\n", zs.size(),
              w.err, double(w.z));
  EXPECT_LE(w.err, 2.0) << "at z = " << w.z;
}

#else

TEST(SparseAttentionLog, OnlyInAvx512Builds) {
  GTEST_SKIP() << "log8_from_one is compiled only with AVX-512 (this build has scalar logf)";
}

#endif

}  // namespace
}  // namespace trex::kernels::attn_detail
