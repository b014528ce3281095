// Strategy search: results are valid, fit, come best first, and the pruning loses nothing
// against an exhaustive evaluation of the same space.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "plan/plan_test_util.h"
#include "trex/plan/search.h"
#include "trex/plan/strategy_toml.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::make_run;
using testing::shipped_cluster;
using testing::shipped_model;

TEST(Search, TopStrategiesFitAreValidAndSorted) {
  model::ModelConfig pro = shipped_model("deepseek-v4-pro");
  Cluster cm = shipped_cluster("cloudmatrix384");
  plan::Run run = make_run(8192, 384);
  SearchOptions o;
  o.top_k = 10;
  SearchResult r = search(pro, cm, run, o);
  ASSERT_EQ(r.top.size(), 10u);
  EXPECT_GT(r.refused, 0);
  EXPECT_GT(r.pruned_memory, 0);
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Prediction& p = r.top[i];
    EXPECT_TRUE(p.memory.fits);
    Strategy s = p.strategy;
    EXPECT_NO_THROW(complete_and_check(pro, cm, run, s));
    EXPECT_EQ(s.tp * s.cp * s.dp * s.pp, 384);
    EXPECT_EQ(s.tp * s.cp * s.dp, s.etp * s.ep * s.edp);
    if (i > 0) {
      EXPECT_LE(r.top[i - 1].time.step, p.time.step);
    }
  }
  // With the hand-written layout's other fields as the base, the search is at least as good as it.
  Strategy hand = load_strategy(testing::source_path("configs/strategy/v4-pro-cm384-optimized.toml"));
  Prediction h = predict(pro, cm, run, hand);
  ASSERT_TRUE(h.memory.fits);
  o.base = hand;
  o.top_k = 1;
  SearchResult with_base = search(pro, cm, run, o);
  ASSERT_EQ(with_base.top.size(), 1u);
  EXPECT_LE(with_base.top[0].time.step, h.time.step);
}

// The base a stack gives (`plan search --stack` without --base) carries the stack's overlap
// defaults, the same as an empty [strategy] table read with that stack; every result keeps them.
TEST(Search, AStacksDefaultsReachTheSearchBase) {
  StackProfile stack;
  stack.name = "test";
  stack.tp_overlap = 0.7;
  stack.dp_overlap = false;
  stack.zero3_prefetch = false;
  stack.pp_overlap = true;
  stack.moe_overlap = MoeOverlap::kOneFOneB;
  stack.moe_dispatcher = MoeDispatcher::kDeepEp;
  Strategy base = strategy_on_stack(stack);
  Strategy read = read_strategy(toml::table{}, "empty.toml", stack);
  EXPECT_EQ(base.tp_overlap, read.tp_overlap);
  EXPECT_EQ(base.dp_overlap, read.dp_overlap);
  EXPECT_EQ(base.zero3_prefetch, read.zero3_prefetch);
  EXPECT_EQ(base.pp_overlap, read.pp_overlap);
  EXPECT_EQ(base.moe_overlap, read.moe_overlap);
  EXPECT_EQ(base.moe_dispatcher, read.moe_dispatcher);
  EXPECT_EQ(base.tp_overlap, 0.7);
  EXPECT_TRUE(base.pp_overlap);

  model::ModelConfig flash = shipped_model("deepseek-v4-flash");
  Cluster cm = shipped_cluster("cloudmatrix384");
  set_nodes(cm, 8);
  SearchOptions o;
  o.top_k = 3;
  o.base = base;
  SearchResult r = search(flash, cm, make_run(8192, 64), o);
  ASSERT_FALSE(r.top.empty());
  for (const Prediction& p : r.top) {
    EXPECT_EQ(p.strategy.tp_overlap, 0.7);
    EXPECT_FALSE(p.strategy.dp_overlap);
    EXPECT_FALSE(p.strategy.zero3_prefetch);
    EXPECT_TRUE(p.strategy.pp_overlap);
    EXPECT_EQ(p.strategy.moe_dispatcher, MoeDispatcher::kDeepEp);
    EXPECT_EQ(p.strategy.stack.name, "test");
  }
}

// The best fitting step time over the whole space, with no pruning at all.
double exhaustive_best(const model::ModelConfig& m, const Cluster& c, const Run& run) {
  double best = std::numeric_limits<double>::infinity();
  const long devices = c.devices();
  for (long tp = 1; tp <= c.devices_per_node; ++tp)
    for (long cp = 1; cp <= 16; cp *= 2)
      for (long pp = 1; pp <= std::min<long>(m.layers, devices); ++pp)
        for (long vpp : {1L, 2L, 4L})
          for (long ep = 1; ep <= (m.is_moe() ? std::min<long>(m.ffn.routed_experts, devices) : 1); ++ep)
            for (long etp : {1L, 2L, 4L, 8L})
              for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
                for (bool swap : {false, true}) {
                  if (devices % (tp * cp * pp) != 0) continue;
                  Strategy s;
                  s.tp = tp, s.cp = cp, s.pp = pp, s.vpp = vpp, s.ep = ep, s.etp = etp, s.recompute = rc;
                  s.swap_optimizer = swap;
                  if (vpp > 1 && pp == 1) continue;
                  if (etp > c.devices_per_node) continue;
                  if (!m.is_moe() && etp > 1) continue;
                  try {
                    Prediction p = predict(m, c, run, s);
                    if (p.memory.fits) best = std::min(best, p.time.step);
                  } catch (const InputError&) {
                  }
                }
  return best;
}

TEST(Search, PruningLosesNothingOnASmallCluster) {
  model::ModelConfig flash = shipped_model("deepseek-v4-flash");
  Cluster cm = shipped_cluster("cloudmatrix384");
  set_nodes(cm, 4);  // 32 NPUs
  plan::Run run = make_run(4096, 64);
  SearchOptions o;
  o.top_k = 1;
  SearchResult r = search(flash, cm, run, o);
  ASSERT_EQ(r.top.size(), 1u);
  EXPECT_DOUBLE_EQ(r.top[0].time.step, exhaustive_best(flash, cm, run));
}

TEST(Search, DenseModelsSearchWithoutExperts) {
  model::ModelConfig gpt = shipped_model("gpt3-175b");
  Cluster a100 = shipped_cluster("dgx-a100");
  set_nodes(a100, 16);
  SearchOptions o;
  o.top_k = 3;
  SearchResult r = search(gpt, a100, make_run(2048, 256), o);
  ASSERT_FALSE(r.top.empty());
  for (const Prediction& p : r.top) {
    EXPECT_EQ(p.strategy.ep, 1);
    EXPECT_EQ(p.strategy.etp, 1);
  }
}

TEST(Search, NothingFitsGivesAnEmptyList) {
  model::ModelConfig pro = shipped_model("deepseek-v4-pro");
  Cluster cm = shipped_cluster("cloudmatrix384");
  set_nodes(cm, 1);  // 8 NPUs cannot hold 1.6T parameters
  SearchResult r = search(pro, cm, make_run(4096, 8), SearchOptions{});
  EXPECT_TRUE(r.top.empty());
  EXPECT_EQ(r.fitting, 0);
}

}  // namespace
}  // namespace trex::plan
