// PackedWeights: one packed copy per (address, shape), kept until clear(); the matvec_rows that
// takes it runs the packed product when given one and matvec.h's row-major one when not.
#include "trex/model/packed_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace trex::model {
namespace {

TEST(PackedWeights, OneCopyPerAddressAndShape) {
  std::vector<float> w(64 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 13) - 6.f;
  PackedWeights pk;
  const PackedMatrix& a = pk.get(w.data(), 64, 32);
  EXPECT_EQ(&pk.get(w.data(), 64, 32), &a);  // not packed again
  const PackedMatrix& half = pk.get(w.data(), 32, 32);  // the first half as a matrix of its own
  EXPECT_NE(&half, &a);
  EXPECT_EQ(half.out(), 32);
  EXPECT_EQ(pk.bytes(), size_t(64 * 32 + 32 * 32) * sizeof(float));
  pk.clear();
  EXPECT_EQ(pk.bytes(), 0u);
}

TEST(PackedWeights, PackedAndRowMajorProductsAgree) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  const int64_t out = 40, in = 72, n = 4;
  std::vector<float> w(size_t(out * in)), x(size_t(n * in));
  for (float& v : w) v = dist(rng);
  for (float& v : x) v = dist(rng);
  PackedWeights pk;
  std::vector<float> yp(size_t(n * out)), yr(yp.size());
  matvec_rows(&pk, w.data(), x.data(), n, out, in, yp.data());
  matvec_rows(nullptr, w.data(), x.data(), n, out, in, yr.data());
  EXPECT_EQ(pk.bytes(), size_t(48 * in) * sizeof(float));  // used the packed copy (3 panels)
  for (size_t i = 0; i < yp.size(); ++i) EXPECT_NEAR(yp[i], yr[i], 1e-4 * (1 + std::abs(yr[i])));
}

}  // namespace
}  // namespace trex::model
