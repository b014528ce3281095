// PackedWeights: one packed copy per (address, shape), kept until clear(); the matvec_rows that
// takes it runs the packed product when given one and matvec.h's row-major one when not.
#include "trex/model/packed_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
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


// More matrices than the first table holds (it grows past half of 256 slots), looked up from
// four threads at once, each in its own order: every thread gets the one copy of each (the
// lookups take no lock; a copy is never packed twice into the map, never moved by a growth).
TEST(PackedWeights, OneCopyEachUnderConcurrentLookupsAndGrowth) {
  const int64_t out = 16, in = 8, kMatrices = 600;
  std::vector<float> w(size_t(kMatrices * out * in));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7);
  PackedWeights pk;
  const int kThreads = 4;
  std::vector<std::vector<const PackedMatrix*>> seen(kThreads, std::vector<const PackedMatrix*>(size_t(kMatrices)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (int64_t j = 0; j < kMatrices; ++j) {
          const int64_t m = t % 2 ? kMatrices - 1 - j : j;
          const PackedMatrix& p = pk.get(w.data() + m * out * in, out, in);
          if (round == 0) seen[size_t(t)][size_t(m)] = &p;
          else if (seen[size_t(t)][size_t(m)] != &p) seen[size_t(t)][size_t(m)] = nullptr;  // moved
        }
    });
  for (auto& th : threads) th.join();
  for (int64_t m = 0; m < kMatrices; ++m) {
    const PackedMatrix* first = seen[0][size_t(m)];
    ASSERT_NE(first, nullptr) << "matrix " << m;
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[size_t(t)][size_t(m)], first) << "matrix " << m;
    EXPECT_EQ(&pk.get(w.data() + m * out * in, out, in), first);
    EXPECT_EQ(first->panel(0)[0], w[size_t(m * out * in)]);  // its own weights (row 0, input 0)
  }
  EXPECT_EQ(pk.bytes(), size_t(kMatrices * out * in) * sizeof(float));
}


// [top; bottom] packed as one matrix: its own copy (not the 2-out matrix at top's address), and
// its product gives each half's outputs with the bits of that half's own product.
TEST(PackedWeights, StackedCopyGivesBothHalvesProductsBitForBit) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  const int64_t out = 40, in = 72, n = 5;  // 40 rows a half: the stacked panels straddle them
  std::vector<float> both(size_t(2 * out * in)), bottom(size_t(out * in)), x(size_t(n * in));
  for (float& v : both) v = dist(rng);
  for (float& v : bottom) v = dist(rng);
  for (float& v : x) v = dist(rng);
  PackedWeights pk;
  const PackedMatrix& st = pk.get_stacked(both.data(), bottom.data(), out, in);
  EXPECT_EQ(st.out(), 2 * out);
  EXPECT_NE(&pk.get(both.data(), 2 * out, in), &st);  // the first 2 out rows of `both`: another matrix
  EXPECT_EQ(&pk.get_stacked(both.data(), bottom.data(), out, in), &st);
  std::vector<float> y(size_t(n * 2 * out)), top_y(size_t(n * out)), bottom_y(top_y.size());
  matvec_rows(st, x.data(), n, y.data());
  matvec_rows(&pk, both.data(), x.data(), n, out, in, top_y.data());
  matvec_rows(&pk, bottom.data(), x.data(), n, out, in, bottom_y.data());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      EXPECT_EQ(y[size_t(r * 2 * out + o)], top_y[size_t(r * out + o)]) << r << " " << o;
      EXPECT_EQ(y[size_t(r * 2 * out + out + o)], bottom_y[size_t(r * out + o)]) << r << " " << o;
    }
}

}  // namespace
}  // namespace trex::model
