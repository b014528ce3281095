// The MoE layer: routing against a brute-force reference, hash table, load counts, the bias rule,
// and finite-difference gradients of x, the gate, the routed experts and the shared expert.
#include "trex/model/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/tiny_config.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

// One layer's parameters and gradients as owned vectors, pointed to by MoeParams / MoeGrads.
struct MoeBlob {
  std::vector<float> gate, dgate;
  std::vector<std::vector<float>> w1, w2, w3, dw1, dw2, dw3;  // routed experts, then shared
  int E = 0;

  MoeBlob(const ModelConfig& c, uint32_t seed, float std = 0.3f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, std);
    int64_t d = c.hidden, f = c.ffn.expert_hidden;
    E = c.ffn.routed_experts;
    auto fill = [&](int64_t n) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = nd(rng);
      return v;
    };
    gate = fill(E * d);
    dgate.assign(gate.size(), 0.f);
    for (int e = 0; e < E + c.ffn.shared_experts; ++e) {
      w1.push_back(fill(f * d));
      w2.push_back(fill(d * f));
      w3.push_back(fill(f * d));
      dw1.emplace_back(size_t(f * d), 0.f);
      dw2.emplace_back(size_t(d * f), 0.f);
      dw3.emplace_back(size_t(f * d), 0.f);
    }
  }
  MoeParams params() const {
    MoeParams p;
    p.gate = gate.data();
    for (size_t e = 0; e < w1.size(); ++e) {
      auto& a = int(e) < E ? p.w1 : p.shared_w1;
      auto& b = int(e) < E ? p.w2 : p.shared_w2;
      auto& c = int(e) < E ? p.w3 : p.shared_w3;
      a.push_back(w1[e].data());
      b.push_back(w2[e].data());
      c.push_back(w3[e].data());
    }
    return p;
  }
  MoeGrads grads() {
    MoeGrads g;
    g.gate = dgate.data();
    for (size_t e = 0; e < w1.size(); ++e) {
      auto& a = int(e) < E ? g.w1 : g.shared_w1;
      auto& b = int(e) < E ? g.w2 : g.shared_w2;
      auto& c = int(e) < E ? g.w3 : g.shared_w3;
      a.push_back(dw1[e].data());
      b.push_back(dw2[e].data());
      c.push_back(dw3[e].data());
    }
    return g;
  }
};

std::vector<float> randn(size_t n, uint32_t seed, float std = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, std);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

TEST(MoeLayer, ScoreRoutingMatchesBruteForce) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, 1);
  MoeLayer layer(c, /*hash=*/false);
  for (int e = 0; e < layer.experts(); ++e) layer.bias()[size_t(e)] = 0.05f * float(e % 3) - 0.05f;
  const int64_t T = 37, d = c.hidden, E = c.ffn.routed_experts, K = c.ffn.top_k;
  std::vector<float> x = randn(size_t(T * d), 2), out(size_t(T * d));
  std::vector<int32_t> ids(size_t(T), 0);
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  std::vector<int64_t> load(size_t(E), 0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> s(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) {
      double l = 0;
      for (int64_t i = 0; i < d; ++i) l += double(x[size_t(t * d + i)]) * blob.gate[size_t(e * d + i)];
      s[size_t(e)] = std::sqrt(std::log1p(std::exp(l)));
    }
    std::vector<int> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return s[size_t(a)] + layer.bias()[size_t(a)] > s[size_t(b)] + layer.bias()[size_t(b)];
    });
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += s[size_t(order[size_t(k)])];
    for (int64_t k = 0; k < K; ++k) {
      int e = order[size_t(k)];
      EXPECT_EQ(layer.selected()[size_t(t * K + k)], e) << "token " << t << " slot " << k;
      EXPECT_NEAR(layer.weights()[size_t(t * K + k)], c.ffn.routed_scaling_factor * s[size_t(e)] / sum, 1e-5);
      load[size_t(e)]++;
    }
  }
  EXPECT_EQ(layer.load(), load);
  EXPECT_EQ(std::accumulate(load.begin(), load.end(), int64_t(0)), T * K);
}

TEST(MoeLayer, TiesGoToTheLowerExpertIndex) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, 1);
  std::fill(blob.gate.begin(), blob.gate.end(), 0.f);  // every score equal
  MoeLayer layer(c, false);
  std::vector<float> x = randn(size_t(c.hidden), 3), out(size_t(c.hidden));
  int32_t id = 0;
  layer.forward(blob.params(), x.data(), &id, 1, out.data());
  EXPECT_EQ(layer.selected(), (std::vector<int32_t>{0, 1}));
}

TEST(MoeLayer, HashTableIsDistinctDeterministicAndUsed) {
  ModelConfig c = test_util::tiny_v4_config();
  std::vector<int32_t> a = build_tid2eid(c.vocab, 4, 2, 7), b = build_tid2eid(c.vocab, 4, 2, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, build_tid2eid(c.vocab, 4, 2, 8));
  std::vector<int64_t> used(4, 0);
  for (int t = 0; t < c.vocab; ++t) {
    EXPECT_NE(a[size_t(2 * t)], a[size_t(2 * t + 1)]) << t;
    for (int k = 0; k < 2; ++k) {
      ASSERT_GE(a[size_t(2 * t + k)], 0);
      ASSERT_LT(a[size_t(2 * t + k)], 4);
      used[size_t(a[size_t(2 * t + k)])]++;
    }
  }
  for (int64_t u : used) EXPECT_GT(u, 10);  // 128 draws over 4 experts: none starved

  MoeBlob blob(c, 4);
  MoeLayer layer(c, /*hash=*/true);
  EXPECT_EQ(layer.tid2eid(), build_tid2eid(c.vocab, 4, 2, uint64_t(c.ffn.hash_seed)));
  const int64_t T = 20;
  std::vector<float> x = randn(size_t(T * c.hidden), 5), out(size_t(T * c.hidden));
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ids[size_t(t)] = int32_t((t * 13) % c.vocab);
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  for (int64_t t = 0; t < T; ++t)
    for (int k = 0; k < 2; ++k)
      EXPECT_EQ(layer.selected()[size_t(2 * t + k)], layer.tid2eid()[size_t(ids[size_t(t)] * 2 + k)]);
  // Hash layers ignore the bias and never update it.
  layer.update_bias(0.1f);
  for (float v : layer.bias()) EXPECT_EQ(v, 0.f);
  int32_t bad = c.vocab;
  EXPECT_THROW(layer.forward(blob.params(), x.data(), &bad, 1, out.data()), InputError);
  // Bad ids in two of the route's blocks of tokens (it runs them over the pool): the error names
  // the first in token order, whichever block a thread reached first.
  const int64_t T2 = 300;
  std::vector<float> x2 = randn(size_t(T2 * c.hidden), 6), out2(size_t(T2 * c.hidden));
  std::vector<int32_t> ids2(static_cast<size_t>(T2), 1);
  ids2[150] = -7;
  ids2[290] = c.vocab + 3;
  for (int rep = 0; rep < 5; ++rep) {
    try {
      layer.forward(blob.params(), x2.data(), ids2.data(), T2, out2.data());
      ADD_FAILURE() << "no error for token id -7";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("token id -7 outside"), std::string::npos) << e.what();
    }
  }
}

TEST(MoeLayer, BiasRuleMovesTowardsTheMeanLoad) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, 6);
  MoeLayer layer(c, false);
  const int64_t T = 31;
  std::vector<float> x = randn(size_t(T * c.hidden), 7), out(size_t(T * c.hidden));
  std::vector<int32_t> ids(size_t(T), 0);
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  std::vector<int64_t> load = layer.load();
  double mean = double(T * c.ffn.top_k) / c.ffn.routed_experts;
  std::vector<float> before = layer.bias();
  layer.update_bias(1e-3f);
  for (int e = 0; e < c.ffn.routed_experts; ++e) {
    double want = load[size_t(e)] < mean ? 1e-3 : load[size_t(e)] > mean ? -1e-3 : 0.0;
    EXPECT_FLOAT_EQ(layer.bias()[size_t(e)] - before[size_t(e)], float(want)) << e;
  }
}

// L = sum(out * R) in double; directional and per-element finite differences.
void check_moe_gradients(bool hash, uint32_t seed, int64_t T = 9) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, seed);
  MoeLayer layer(c, hash);
  if (!hash)
    for (int e = 0; e < layer.experts(); ++e) layer.bias()[size_t(e)] = 0.02f * float(e);
  const int64_t d = c.hidden;
  std::vector<float> x = randn(size_t(T * d), seed + 1), R = randn(size_t(T * d), seed + 2);
  std::vector<float> out(static_cast<size_t>(T * d)), dx(size_t(T * d));
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ids[size_t(t)] = int32_t((t * 5 + 1) % c.vocab);
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  std::vector<int32_t> sel0 = layer.selected();
  layer.backward(blob.params(), R.data(), dx.data(), blob.grads());

  MoeLayer probe(c, hash);
  probe.bias() = layer.bias();
  bool selection_moved = false;
  auto loss = [&]() {
    probe.forward(blob.params(), x.data(), ids.data(), T, out.data());
    if (probe.selected() != sel0) selection_moved = true;
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * R[i];
    return s;
  };
  auto check = [&](const std::string& what, std::vector<float>& p, const std::vector<float>& g) {
    int bad = 0;
    for (int64_t c = 0; c < 12; ++c) {
      size_t i = size_t(c * (int64_t(p.size()) - 1) / 11);
      float keep = p[i], h = 2e-3f;
      p[i] = keep + h;
      double lp = loss();
      p[i] = keep - h;
      double lm = loss();
      p[i] = keep;
      double fd = (lp - lm) / (double(keep + h) - double(keep - h));
      if (!(std::fabs(fd - g[i]) <= 5e-3 + 5e-3 * std::fabs(fd)))
        if (bad++ < 4) ADD_FAILURE() << what << "[" << i << "]: analytic " << g[i] << " fd " << fd;
    }
    EXPECT_EQ(bad, 0) << what;
  };
  check("x", x, dx);
  check("gate", blob.gate, blob.dgate);
  int E = c.ffn.routed_experts;
  for (int e = 0; e <= E; ++e) {  // e == E: the shared expert
    std::string name = e < E ? "expert " + std::to_string(e) : std::string("shared");
    check(name + ".w1", blob.w1[size_t(e)], blob.dw1[size_t(e)]);
    check(name + ".w2", blob.w2[size_t(e)], blob.dw2[size_t(e)]);
    check(name + ".w3", blob.w3[size_t(e)], blob.dw3[size_t(e)]);
  }
  EXPECT_FALSE(selection_moved) << "a step changed the routing: the check is not a derivative";
  // The gate gradient is non-zero in hash layers too (through the weights w).
  double gate_norm = 0;
  for (float v : blob.dgate) gate_norm += double(v) * v;
  EXPECT_GT(gate_norm, 0);
}

TEST(MoeLayer, GradientsMatchFiniteDifferencesScoreRouted) { check_moe_gradients(false, 11); }
TEST(MoeLayer, GradientsMatchFiniteDifferencesHashRouted) { check_moe_gradients(true, 21); }
// One token takes the matrix-vector path of the forward.
TEST(MoeLayer, GradientsMatchFiniteDifferencesOneToken) {
  check_moe_gradients(false, 51, 1);
  check_moe_gradients(true, 61, 1);
}

TEST(MoeLayer, GradientsAccumulateAcrossCalls) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, 31);
  MoeLayer layer(c, false);
  const int64_t T = 5, d = c.hidden;
  std::vector<float> x = randn(size_t(T * d), 32), R = randn(size_t(T * d), 33);
  std::vector<float> out(static_cast<size_t>(T * d)), dx(size_t(T * d));
  std::vector<int32_t> ids(size_t(T), 1);
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  layer.backward(blob.params(), R.data(), dx.data(), blob.grads());
  std::vector<float> once = blob.dw1[0], gate_once = blob.dgate;
  layer.forward(blob.params(), x.data(), ids.data(), T, out.data());
  layer.backward(blob.params(), R.data(), dx.data(), blob.grads());
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(blob.dw1[0][i], 2 * once[i]);
  for (size_t i = 0; i < gate_once.size(); ++i) EXPECT_FLOAT_EQ(blob.dgate[i], 2 * gate_once[i]);
}

TEST(MoeLayer, OneTokenAtATimeEqualsTheBatch) {
  ModelConfig c = test_util::tiny_v4_config();
  MoeBlob blob(c, 41);
  MoeLayer batch(c, false), single(c, false);
  const int64_t T = 6, d = c.hidden;
  std::vector<float> x = randn(size_t(T * d), 42), out(size_t(T * d)), one(static_cast<size_t>(d));
  std::vector<int32_t> ids(size_t(T), 3);
  batch.forward(blob.params(), x.data(), ids.data(), T, out.data());
  for (int64_t t = 0; t < T; ++t) {
    single.forward(blob.params(), x.data() + t * d, ids.data() + t, 1, one.data());
    for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(one[size_t(i)], out[size_t(t * d + i)], 1e-5f);
  }
}

}  // namespace
}  // namespace trex::model
