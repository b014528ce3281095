// sample_token: greedy ties, the nucleus cut, draw frequencies that follow the softmax, and
// excluded ids (number slots a prompt cannot fill) drawn never, as -inf logits would be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "trex/model/sampling.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

TEST(SampleToken, GreedyIsArgmaxWithTiesToTheLowerId) {
  std::vector<float> l = {0.5f, 2.f, -1.f, 2.f};
  EXPECT_EQ(sample_token(l, 0, 1, 0.99), 1);
  EXPECT_EQ(sample_token(l, -1, 0.1, 0.5), 1);
}

TEST(SampleToken, DrawsFollowTheTemperatureSoftmax) {
  std::vector<float> l = {1.f, 0.f, -1.f, 0.5f};
  const double T = 0.7;
  double z = 0;
  std::vector<double> p(l.size());
  for (size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp(l[i] / T);
  // Draws on an even grid of u give each token a share equal to its probability.
  const int n = 100000;
  std::vector<int> count(l.size(), 0);
  for (int k = 0; k < n; ++k) ++count[size_t(sample_token(l, T, 1, (k + 0.5) / n))];
  for (size_t i = 0; i < l.size(); ++i)
    EXPECT_NEAR(count[i] / double(n), p[i] / z, 2e-5) << "token " << i;
}

TEST(SampleToken, TopPKeepsTheSmallestPrefixReachingTheMass) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (logits are their logs, temperature 1).
  std::vector<float> l = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
  // top_p 0.8: tokens 1 and 3 (0.5 + 0.3 reaches 0.8); renormalised 0.625 / 0.375.
  EXPECT_EQ(sample_token(l, 1, 0.8, 0.0), 1);
  EXPECT_EQ(sample_token(l, 1, 0.8, 0.62), 1);
  EXPECT_EQ(sample_token(l, 1, 0.8, 0.63), 3);
  EXPECT_EQ(sample_token(l, 1, 0.8, 0.999999), 3);
  // top_p 0.81 needs token 0 as well; never token 2.
  EXPECT_EQ(sample_token(l, 1, 0.81, 0.999), 0);
  for (double u : {0.0, 0.3, 0.6, 0.9, 0.999999}) EXPECT_NE(sample_token(l, 1, 0.81, u), 2);
  // A tiny top_p is greedy.
  EXPECT_EQ(sample_token(l, 1, 1e-6, 0.9), 1);
}

// A nucleus larger than the first partial sort (64 tokens) grows it: the draw still follows
// the renormalised nucleus, and tokens outside it are never drawn.
TEST(SampleToken, LargeNucleusAcrossPartialSortSteps) {
  const int V = 1000;
  std::vector<float> l(V);
  for (int i = 0; i < V; ++i) l[size_t(i)] = -0.004f * float((i * 7919) % V);  // a permutation
  double z = 0;
  std::vector<double> p(V);
  for (int i = 0; i < V; ++i) z += p[size_t(i)] = std::exp(double(l[size_t(i)]));
  std::vector<int> order(V);
  for (int i = 0; i < V; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return l[size_t(a)] > l[size_t(b)]; });
  double mass = 0;
  int keep = 0;
  while (mass < 0.5) mass += p[size_t(order[size_t(keep++)])] / z;
  ASSERT_GT(keep, 64);
  std::vector<char> inside(V, 0);
  for (int j = 0; j < keep; ++j) inside[size_t(order[size_t(j)])] = 1;
  const int n = 20000;
  std::vector<int> count(V, 0);
  for (int k = 0; k < n; ++k) ++count[size_t(sample_token(l, 1, 0.5, (k + 0.5) / n))];
  for (int i = 0; i < V; ++i) {
    if (!inside[size_t(i)]) {
      ASSERT_EQ(count[size_t(i)], 0) << i;
      continue;
    }
    EXPECT_NEAR(count[size_t(i)] / double(n), p[size_t(i)] / z / mass, 2e-4) << i;
  }
}

// Excluded ids are drawn as if their logits were -inf, however high they are: greedy takes the
// best of the rest, and every draw (top_p 1 and a nucleus) equals the draw on logits with -inf
// written in, so the other ids keep their renormalised shares and the same u gives the same id.
TEST(SampleToken, ExcludedIdsAreNeverDrawnAndTheRestAreDrawnAsWithMinusInfinity) {
  // Ids 5..7 stand for slots: their logits far above the rest.
  std::vector<float> l = {0.3f, -0.2f, 1.1f, 0.4f, 0.9f, 40.f, 39.f, 41.f};
  const std::vector<int32_t> excluded = {6, 7, 5};
  std::vector<float> minus_inf = l;
  for (int32_t id : excluded) minus_inf[size_t(id)] = -INFINITY;
  EXPECT_EQ(sample_token(l, 0, 1, 0.5), 7);
  EXPECT_EQ(sample_token(l, 0, 1, 0.5, excluded), 2);
  // One excluded: the next best slot still wins (only the named ids are masked).
  EXPECT_EQ(sample_token(l, 0, 1, 0.5, std::vector<int32_t>{7}), 5);
  for (double T : {0.5, 1.0, 2.0})
    for (double top_p : {1.0, 0.9, 0.3}) {
      const int n = 20000;
      std::vector<int> count(l.size(), 0);
      for (int k = 0; k < n; ++k) {
        const double u = (k + 0.5) / n;
        const int32_t got = sample_token(l, T, top_p, u, excluded);
        ASSERT_EQ(got, sample_token(minus_inf, T, top_p, u)) << T << " " << top_p << " " << u;
        ++count[size_t(got)];
      }
      for (int32_t id : excluded) EXPECT_EQ(count[size_t(id)], 0) << T << " " << top_p;
      if (top_p == 1.0) {  // the rest in their softmax shares over the rest alone
        double z = 0;
        for (size_t i = 0; i < 5; ++i) z += std::exp(l[i] / T);
        for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(count[i] / double(n), std::exp(l[i] / T) / z, 1e-4) << T << " " << i;
      }
      // Without the mask the slots take (nearly) every draw.
      EXPECT_GE(sample_token(l, T, top_p, 0.5), 5);
    }
  // Ids outside the logits are ignored; excluding every id is an error, not a draw.
  EXPECT_EQ(sample_token(l, 0, 1, 0.5, std::vector<int32_t>{-1, 8, 100, 7}), 5);
  EXPECT_THROW(sample_token(std::vector<float>{1.f, 2.f}, 1, 1, 0.5, std::vector<int32_t>{0, 1}), InputError);
}

}  // namespace
}  // namespace trex::model
