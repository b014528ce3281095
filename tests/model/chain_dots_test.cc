// chain_dots: each key's dot product side by side has the bits of that key's chain alone, each
// product rounded then added in order (what attention decoding's loop, one key at a time,
// compiled to before: chain_dots.h), for key counts that fill no, one and several SIMD vectors
// and leave tails, and element counts that are and are not multiples of 16 (the test models'
// indexer width 8, and 24).
#include "trex/model/chain_dots.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace trex::model {
namespace {

TEST(ChainDots, SideBySideEqualsEachKeyAloneBitForBit) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t n : {8, 16, 24, 32, 64}) {
    for (size_t nk : {size_t(1), size_t(7), size_t(16), size_t(33), size_t(100)}) {
      SCOPED_TRACE(std::to_string(n) + " elements, " + std::to_string(nk) + " keys");
      std::vector<float> q(static_cast<size_t>(n)), rows(static_cast<size_t>(n) * nk);
      for (float& v : q) v = nd(rng);
      for (float& v : rows) v = nd(rng);
      std::vector<const float*> keys;
      for (size_t j = 0; j < nk; ++j) keys.push_back(rows.data() + j * size_t(n));
      std::vector<float> kT, got(nk);
      transpose_keys(keys.data(), nk, n, kT);
      chain_dots(q.data(), n, kT.data(), nk, got.data());
      size_t differ = 0;
      for (size_t j = 0; j < nk; ++j) {
        float alone = 0.f;
        for (int64_t e = 0; e < n; ++e) {
          volatile float product = q[size_t(e)] * keys[j][e];  // rounded: never fused into the add
          alone += product;
        }
        differ += got[j] != alone;
      }
      EXPECT_EQ(differ, 0u);
    }
  }
}

}  // namespace
}  // namespace trex::model
