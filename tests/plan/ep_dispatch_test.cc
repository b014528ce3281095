// A hierarchical EP dispatcher (DeepEP, HybridEP, DeepSeek-V3's kernels) sends a token once per
// remote scale-up domain: ep_dispatch.h's factor, its use in all_to_all_s and in a prediction,
// each against numbers worked out by hand.
#include "trex/plan/ep_dispatch.h"

#include <gtest/gtest.h>

#include "plan/plan_test_util.h"
#include "trex/plan/collectives.h"
#include "trex/plan/predict.h"

namespace trex::plan {
namespace {

using testing::make_run;
using testing::tiny_cluster;
using testing::tiny_moe;

TEST(EpDispatch, DedupFactorCountsDistinctRemoteDomains) {
  // 8 experts over 4 ranks in 2 domains of 2 (4 experts a domain), top 2. The other domain
  // holds neither expert with probability (4/8)(3/7) = 3/14, so 11/14 copies cross per token;
  // a plain all-to-all sends 2 x 2/4 = 1 copy across: factor 11/14.
  EXPECT_NEAR(dedup_scale_out_factor(4, 2, 2, 8), 11.0 / 14.0, 1e-12);
  // Top 1: one expert, at most one copy either way: nothing to save.
  EXPECT_NEAR(dedup_scale_out_factor(4, 2, 1, 8), 1.0, 1e-12);
  // The whole group in one domain: no scale-out traffic to scale.
  EXPECT_EQ(dedup_scale_out_factor(8, 8, 8, 128), 1.0);
  // Qwen3-235B on EP 32 over DGX H100 nodes (4 domains of 8, 128 experts, top 8): about 2.72
  // remote copies instead of 6, so the factor is below one half.
  double f = dedup_scale_out_factor(32, 8, 8, 128);
  EXPECT_GT(f, 0.44);
  EXPECT_LT(f, 0.46);
}

TEST(EpDispatch, OnlyTrafficBeyondTheDomainShrinks) {
  // 32 ranks over 4 nodes, 1 GB sent per rank: 7/32 of it over NVLink (2.19 ms), 24/32 over
  // IB (75 ms), the slower level sets the time. Halving the traffic beyond the domain halves
  // the IB part: 37.5 ms, still above NVLink's.
  Cluster c = tiny_cluster(4);
  EXPECT_NEAR(all_to_all_s(c, 32, 1, 1e9), 0.075, 1e-12);
  EXPECT_NEAR(all_to_all_s(c, 32, 1, 1e9, 0.5), 0.0375, 1e-12);
  // Scaled to almost nothing, NVLink's 7/32 GB at 100 GB/s is left.
  EXPECT_NEAR(all_to_all_s(c, 32, 1, 1e9, 0.01), 7.0 / 32 * 1e9 / 100e9, 1e-12);
}

TEST(EpDispatch, DeepEpCutsTheExposedAllToAllOfACrossNodeExpertGroup) {
  // One MoE layer of 128 experts (top 8) on EP 32 over 4 nodes: every all-to-all is IB-bound
  // (above), so with no launch cost the EP time scales by the factor of the first test.
  model::ModelConfig moe = tiny_moe(1, 128, 8);
  Cluster c = tiny_cluster(4);
  Strategy s;
  s.ep = 32;
  double plain = predict(moe, c, make_run(1024, 32), s).time.ep_comm;
  s.moe_dispatcher = MoeDispatcher::kDeepEp;
  double dedup = predict(moe, c, make_run(1024, 32), s).time.ep_comm;
  ASSERT_GT(plain, 0);
  EXPECT_NEAR(dedup / plain, dedup_scale_out_factor(32, 8, 8, 128), 1e-9);
}

}  // namespace
}  // namespace trex::plan
