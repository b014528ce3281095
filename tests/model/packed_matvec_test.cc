// PackedMatrix / matvec_rows on it: each output is one FMA chain over the inputs in order (so the
// exact bits are known), and every row of x computed with others has the bits it has alone, for
// row counts past one block of rows, output counts past one block of panels and a padded last
// panel, and input lengths from 1 up.
#include "trex/model/packed_matvec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace trex::model {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The kernel's sum for one output: from +0, one multiply-add per input in index order (fused
// where the build has FMA, as the vector code is contracted there).
float chain(const float* w, const float* x, int64_t in) {
  float acc = 0.f;
  for (int64_t i = 0; i < in; ++i) {
#ifdef __FMA__
    acc = std::fma(w[i], x[i], acc);
#else
    acc = acc + w[i] * x[i];
#endif
  }
  return acc;
}

TEST(PackedMatvec, EachOutputIsItsInOrderChainAndRowsTogetherEqualRowsAlone) {
  // Panels of 16 outputs: 24 is a block of 2 panels (the second half padding), 33 and 40 blocks of 3,
  // 100: 6 full panels + 4 (a block of 4, then of 3); 192: 3 blocks of 4.
  for (int64_t out : {1, 8, 16, 24, 33, 40, 64, 100, 192}) {
    for (int64_t in : {1, 17, 256}) {
      const std::vector<float> w = random_floats(size_t(out * in), uint32_t(out * 7 + in));
      const PackedMatrix pw(w.data(), out, in);
      ASSERT_EQ(pw.out(), out);
      ASSERT_EQ(pw.in(), in);
      // Blocks of 1 to 6 rows; 7, 8, 13: blocks of six rows, then the rest.
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
        const std::vector<float> x = random_floats(size_t(n * in), 100 + uint32_t(n));
        std::vector<float> together(size_t(n * out), -1.f);
        matvec_rows(pw, x.data(), n, together.data());
        for (int64_t b = 0; b < n; ++b) {
          std::vector<float> alone(size_t(out + 1), -7.f);  // one past the end: not written
          matvec_rows(pw, x.data() + b * in, 1, alone.data());
          ASSERT_EQ(alone[size_t(out)], -7.f) << "wrote past out " << out;
          for (int64_t o = 0; o < out; ++o) {
            const float want = chain(w.data() + o * in, x.data() + b * in, in);
            ASSERT_EQ(alone[size_t(o)], want) << "out " << out << " in " << in << " o " << o;
            ASSERT_EQ(together[size_t(b * out + o)], alone[size_t(o)])
                << "out " << out << " in " << in << " n " << n << " row " << b << " o " << o;
          }
        }
      }
    }
  }
}

// Large enough to split its panels over the pool: the same bits as the serial path gives.
TEST(PackedMatvec, ThePoolsSplitGivesTheSerialBits) {
  const int64_t out = 4096, in = 256, n = 3;
  const std::vector<float> w = random_floats(size_t(out * in), 5);
  const std::vector<float> x = random_floats(size_t(n * in), 6);
  const PackedMatrix pw(w.data(), out, in);
  std::vector<float> y(size_t(n * out));
  matvec_rows(pw, x.data(), n, y.data());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out; o += 97)
      ASSERT_EQ(y[size_t(b * out + o)], chain(w.data() + o * in, x.data() + b * in, in)) << o;
}

}  // namespace
}  // namespace trex::model
