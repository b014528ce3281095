// matvec_rows: every row of x computed with others has the bits it has alone (what trex serve's
// batched decoding relies on), for row counts that use the blocks of four and the remainder, and
// input lengths with and without a tail past the sixteen partial sums; and it is W x.
#include "trex/model/matvec.h"

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

TEST(Matvec, RowsTogetherEqualEachRowAloneBitForBit) {
  for (int64_t in : {16, 37, 100, 256}) {  // 100: the 64-float loop, then 16-float chunks, then a tail
    const int64_t out = 33;
    const std::vector<float> w = random_floats(size_t(out * in), 1);
    for (int64_t n : {1, 2, 3, 4, 5, 8, 9}) {
      const std::vector<float> x = random_floats(size_t(n * in), 2 + uint32_t(n));
      std::vector<float> together(static_cast<size_t>(n * out));
      matvec_rows(w.data(), x.data(), n, out, in, together.data());
      for (int64_t b = 0; b < n; ++b) {
        std::vector<float> alone(static_cast<size_t>(out));
        matvec(w.data(), x.data() + b * in, out, in, alone.data());
        for (int64_t o = 0; o < out; ++o) {
          ASSERT_EQ(together[size_t(b * out + o)], alone[size_t(o)]) << "in " << in << " n " << n << " row " << b;
          double want = 0;
          for (int64_t i = 0; i < in; ++i) want += double(w[size_t(o * in + i)]) * double(x[size_t(b * in + i)]);
          EXPECT_NEAR(alone[size_t(o)], want, 1e-4 * (1 + std::abs(want)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace trex::model
