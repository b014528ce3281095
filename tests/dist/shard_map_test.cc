// The ZeRO-1 shards of every layout: each element held by exactly one rank; a routed expert's
// elements (each width shard of them) only by ranks of the EDP group that computes them, so no
// expert gradient or optimizer state crosses into another group; dense elements over every rank.
#include "trex/dist/shard_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dist_test_util.h"
#include "trex/model/config.h"

namespace trex::dist {
namespace {

using namespace testing;

struct Fixture {
  TempDir dir{"dist-shard-map"};
  model::ModelConfig config = model::load_model_config(dir.write("tiny.toml", kTinyModel));
  model::Transformer model{config, 3, true};
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

ParallelLayout layout(int dp, int ep, int etp) {
  ParallelLayout l;
  l.dp = dp, l.ep = ep, l.etp = etp;
  return l;
}

// The ranks holding each flat element (-1: none), from the map's ranges; fails on an element
// held twice.
std::vector<int> holders(const ShardMap& map) {
  std::vector<int> who(size_t(map.params()), -1);
  for (int q = 0; q < map.ranks(); ++q) {
    int64_t packed = 0;
    for (const ShardRange& r : map.ranges(q)) {
      for (int64_t i = r.begin; i < r.end; ++i) {
        EXPECT_EQ(who[size_t(i)], -1) << "element " << i << " held by ranks " << who[size_t(i)] << " and " << q;
        who[size_t(i)] = q;
        const OwnedRun& o = map.run_at(i);
        EXPECT_EQ(o.rank, q);
        EXPECT_EQ(o.at + (i - o.begin), packed + (i - r.begin)) << "packed offset of element " << i;
      }
      packed += r.size();
    }
    EXPECT_EQ(packed, map.size(q));
  }
  return who;
}

// Width shard j of routed expert e of MoE layer i: its flat elements.
std::vector<int64_t> expert_elements(const model::Transformer& m, int i, int e, int j, int etp) {
  const model::ModelConfig& c = m.config();
  const int64_t f = c.ffn.expert_hidden, d = c.hidden, fs = f / etp;
  const std::string ex = m.moe_prefix(i) + "ffn.experts." + std::to_string(e) + ".";
  std::vector<int64_t> out;
  for (const char* w : {"w1", "w3"})  // [f, d]: rows [j fs, (j + 1) fs)
    for (int64_t k = j * fs * d; k < (j + 1) * fs * d; ++k) out.push_back(m.layout().offset_of(ex + w) + k);
  for (int64_t row = 0; row < d; ++row)  // w2 [d, f]: columns [j fs, (j + 1) fs)
    for (int64_t k = j * fs; k < (j + 1) * fs; ++k) out.push_back(m.layout().offset_of(ex + "w2") + row * f + k);
  return out;
}

TEST(ShardMapTest, ExpertStateStaysInItsEdpGroupAndEveryElementHasOneHolder) {
  const model::Transformer& m = fixture().model;
  const model::ModelConfig& c = m.config();
  const std::vector<ParallelLayout> layouts = {layout(2, 1, 1), layout(1, 2, 1), layout(1, 1, 2), layout(2, 2, 1),
                                               layout(1, 2, 2), layout(2, 1, 2), layout(4, 1, 1), layout(1, 4, 1)};
  for (const ParallelLayout& L : layouts) {
    SCOPED_TRACE("dp " + std::to_string(L.dp) + " ep " + std::to_string(L.ep) + " etp " + std::to_string(L.etp));
    const int R = L.world();
    ShardMap map(m, L, R);
    std::vector<int> who = holders(map);
    for (size_t i = 0; i < who.size(); ++i) ASSERT_GE(who[i], 0) << "element " << i << " held by no rank";
    std::vector<char> expert(who.size(), 0);
    std::vector<int64_t> experts_held(size_t(R), 0);
    const int El = c.ffn.routed_experts / L.ep;
    for (int i = 0; i < m.moe_layers(); ++i)
      for (int e = 0; e < c.ffn.routed_experts; ++e)
        for (int j = 0; j < L.etp; ++j)
          for (int64_t k : expert_elements(m, i, e, j, L.etp)) {
            expert[size_t(k)] = 1;
            const int q = who[size_t(k)];
            ++experts_held[size_t(q)];
            if (L.ep * L.etp > 1) {
              // The EDP group of (expert e, width shard j): EP index e / El, ETP index j.
              ASSERT_EQ(L.ep_of(q), e / El) << "expert " << e << " of layer " << i << " on rank " << q;
              ASSERT_EQ(L.etp_of(q), j) << "width shard " << j << " of expert " << e << " on rank " << q;
            }
          }
    // Each group's experts are split over all of its members.
    for (int q = 0; q < R; ++q) EXPECT_GT(experts_held[size_t(q)], 0) << "rank " << q << " holds no expert element";
    // Dense elements over every rank.
    std::vector<int64_t> dense(size_t(R), 0);
    for (size_t k = 0; k < who.size(); ++k)
      if (!expert[k]) ++dense[size_t(who[k])];
    for (int q = 0; q < R; ++q) EXPECT_GT(dense[size_t(q)], 0) << "rank " << q << " holds no dense element";
  }
}

TEST(ShardMapTest, ExpertParallelOnTwoRanksKeepsEachRanksExpertsAtHome) {
  // ep 2 on 2 ranks: EDP groups of one rank, so rank r holds every element of its own experts
  // and none of the other rank's.
  const model::Transformer& m = fixture().model;
  ShardMap map(m, layout(1, 2, 1), 2);
  std::vector<int> who = holders(map);
  const int E = m.config().ffn.routed_experts;
  for (int i = 0; i < m.moe_layers(); ++i)
    for (int e = 0; e < E; ++e)
      for (int64_t k : expert_elements(m, i, e, 0, 1)) ASSERT_EQ(who[size_t(k)], e / (E / 2)) << "expert " << e;
}

TEST(ShardMapTest, ExpertTensorParallelWithoutEpKeepsEachWidthShardOnItsRank) {
  // etp 2, ep 1 on 2 ranks (the layout whose expert gradients Megatron-LM once synchronised over
  // the wrong group): width shard j of every expert, w2's columns included, on rank j alone.
  const model::Transformer& m = fixture().model;
  ShardMap map(m, layout(1, 1, 2), 2);
  std::vector<int> who = holders(map);
  for (int i = 0; i < m.moe_layers(); ++i)
    for (int e = 0; e < m.config().ffn.routed_experts; ++e)
      for (int j = 0; j < 2; ++j)
        for (int64_t k : expert_elements(m, i, e, j, 2)) ASSERT_EQ(who[size_t(k)], j) << "expert " << e << " shard " << j;
}

TEST(ShardMapTest, OneRankAndDataParallelShardsAreOneRangeOfWholeChunks) {
  const model::Transformer& m = fixture().model;
  const int64_t n = m.layout().total;
  ShardMap one(m, layout(1, 1, 1), 1);
  ASSERT_EQ(one.ranges(0).size(), 1u);
  EXPECT_EQ(one.ranges(0)[0].begin, 0);
  EXPECT_EQ(one.ranges(0)[0].end, n);
  ShardMap four(m, layout(4, 1, 1), 4);
  for (int q = 0; q < 4; ++q) {
    ASSERT_EQ(four.ranges(q).size(), 1u);
    EXPECT_EQ(four.ranges(q)[0].begin, shard_of(n, 4, q).begin);
    EXPECT_EQ(four.ranges(q)[0].end, shard_of(n, 4, q).end);
    EXPECT_EQ(four.ranges(q)[0].begin % kNormChunk, 0);
  }
  EXPECT_EQ(four.packed_within(1, 0, n).size(), four.size(1));
  EXPECT_EQ(four.packed_within(1, 0, four.ranges(1)[0].begin + 5).end, 5);
}

}  // namespace
}  // namespace trex::dist
