// MoeDecode: the MoE layer of a decoding step cut into route / experts / combine phases, with the
// experts taken by several threads, gives each row bit for bit what MoeLayer::forward's
// few-token path gives it, however many threads share the experts and whatever rows share the step.
#include "trex/model/moe_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <random>
#include <thread>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/lane_work.h"
#include "trex/model/packed_weights.h"

namespace trex::model {
namespace {

struct Weights {
  std::vector<float> gate;
  std::vector<std::vector<float>> w1, w2, w3;  // routed experts, then shared
  MoeParams p;

  Weights(const ModelConfig& c, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 0.3f);
    const int64_t d = c.hidden, f = c.ffn.expert_hidden;
    const int E = c.ffn.routed_experts;
    auto fill = [&](int64_t n) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = nd(rng);
      return v;
    };
    gate = fill(E * d);
    for (int e = 0; e < E + c.ffn.shared_experts; ++e) {
      w1.push_back(fill(f * d));
      w2.push_back(fill(d * f));
      w3.push_back(fill(f * d));
    }
    p.gate = gate.data();
    for (size_t e = 0; e < w1.size(); ++e) {
      (int(e) < E ? p.w1 : p.shared_w1).push_back(w1[e].data());
      (int(e) < E ? p.w2 : p.shared_w2).push_back(w2[e].data());
      (int(e) < E ? p.w3 : p.shared_w3).push_back(w3[e].data());
    }
  }
};

// Rows [0, T) through MoeDecode as BatchDecoder's lanes run it: `threads` threads, each routing
// and combining its own contiguous rows, all taking the items (LaneWork: own segment first, then
// the others'; the shared experts over every row) between two barriers.
std::vector<float> decode(const ModelConfig& c, const MoeParams& p, const MoeLayer& layer,
                          const std::vector<float>& x, const std::vector<int32_t>& ids, int64_t T,
                          int threads, PackedWeights& pk) {
  MoeDecode m(c);
  m.size_rows(T, threads);
  LaneWork work;
  work.reset(threads, m.items());
  std::vector<MoeDecodeScratch> scratch(static_cast<size_t>(threads));
  std::vector<float> out(static_cast<size_t>(T * c.hidden));
  std::barrier<> meet(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const int64_t b0 = t * T / threads, b1 = (t + 1) * T / threads;
      MoeDecodeScratch& s = scratch[size_t(t)];
      m.route(p, layer, x.data(), ids.data(), b0, b1, &pk);
      meet.arrive_and_wait();
      m.order_routed(s);
      for (int i; (i = work.take(t)) >= 0;) m.run_item(p, x.data(), i, s, &pk);
      meet.arrive_and_wait();
      m.combine(b0, b1, out.data() + b0 * c.hidden);
    });
  for (auto& th : pool) th.join();
  return out;
}

// Up to 21 rows (the reference runs them through the few-token path in chunks of kFewTokens, as
// one lane of BatchDecoder does), routed by 1-3 threads; one and two shared experts (the shared
// items lead the first lane's segment).
TEST(MoeDecode, RowsEqualTheLayersFewTokenForward) {
  for (int shared : {1, 2}) {
    ModelConfig c = test_util::tiny_v4_config("0, 4");
    c.ffn.shared_experts = shared;
    const int64_t d = c.hidden;
    Weights w(c, 7);
    PackedWeights pk;
    for (bool hash : {true, false}) {
      MoeLayer layer(c, hash);
      if (!hash)  // a selection bias that changes some choices
        for (size_t e = 0; e < layer.bias().size(); ++e) layer.bias()[e] = 0.05f * float(e % 3);
      for (int64_t T : {1, 2, 5, 8, 17, 21}) {
        std::mt19937 rng(uint32_t(T) + (hash ? 100u : 0u));
        std::normal_distribution<float> nd;
        std::vector<float> x(static_cast<size_t>(T * d));
        for (float& v : x) v = nd(rng);
        std::vector<int32_t> ids(static_cast<size_t>(T));
        for (int32_t& id : ids) id = int32_t(rng() % uint32_t(c.vocab));
        std::vector<float> want(x.size());
        for (int64_t r0 = 0; r0 < T; r0 += MoeLayer::kFewTokens) {
          const int64_t nb = std::min<int64_t>(MoeLayer::kFewTokens, T - r0);
          layer.forward(w.p, x.data() + r0 * d, ids.data() + r0, nb, want.data() + r0 * d, nullptr,
                        &pk);
        }
        for (int threads : {1, 2, 3}) {
          std::vector<float> got = decode(c, w.p, layer, x, ids, T, threads, pk);
          size_t differ = 0;
          for (size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
          EXPECT_EQ(differ, 0u) << (hash ? "hash" : "score") << " layer, " << T << " rows, "
                                << threads << " threads, " << shared << " shared";
        }
      }
    }
  }
}

// The one-row step (MoeLayer::forward's few-token path on the decoder's copies) and the batched
// step (MoeDecode) read the same packed copies: after the layer has run, the decoder's steps over
// the same rows (so the same experts) pack nothing more. Until session 28 the layer packed W1 and
// W3 per width block and MoeDecode [W1; W3] stacked, so a server running both held them twice.
TEST(MoeDecode, TheLayersFewTokenPathAndTheStepShareTheExpertsPackedCopies) {
  ModelConfig c = test_util::tiny_v4_config("0, 4");
  const int64_t d = c.hidden, T = 21;
  Weights w(c, 9);
  MoeLayer layer(c, false);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(T * d)), want(x.size());
  for (float& v : x) v = nd(rng);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(c.vocab));
  PackedWeights pk;
  layer.forward(w.p, x.data(), ids.data(), T, want.data(), nullptr, &pk);
  const size_t after_layer = pk.bytes();
  ASSERT_GT(after_layer, 0u);
  for (int threads : {1, 2}) {
    const std::vector<float> got = decode(c, w.p, layer, x, ids, T, threads, pk);
    EXPECT_EQ(pk.bytes(), after_layer) << threads << " threads";
    EXPECT_EQ(got, want) << threads << " threads";
  }
}

}  // namespace
}  // namespace trex::model
