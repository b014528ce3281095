// sample_token: greedy ties, the nucleus cut, and draw frequencies that follow the softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "trex/model/sampling.h"

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

}  // namespace
}  // namespace trex::model
