// A hierarchical EP dispatcher (DeepEP, HybridEP, DeepSeek-V3's kernels) sends a token once per
// remote scale-up domain: ep_dispatch.h's factor, its use in all_to_all_s and in a prediction,
// each against numbers worked out by hand.
#include "trex/plan/ep_dispatch.h"

#include <gtest/gtest.h>

#include "plan/plan_test_util.h"
#include "trex/plan/collectives.h"
#include "trex/plan/predict.h"
#include "trex/plan/stack.h"

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

TEST(EpDispatch, RanksPerTokenCountsDistinctDestinationRanks) {
  // 8 experts over 4 ranks (2 a rank), top 2: a given rank holds neither expert with
  // probability (6/8)(5/7) = 15/28, so a token reaches 4 x 13/28 = 13/7 ranks, not 2 copies.
  EXPECT_NEAR(ranks_per_token(4, 2, 8), 13.0 / 7.0, 1e-12);
  // Qwen3-30B-A3B's 128 experts, top 8, on EP 8: P = prod_{i<8} (112 - i)/(128 - i) = 0.33258,
  // 5.3394 ranks a token (its own included) against 8 copies of the plain all-to-all.
  EXPECT_NEAR(ranks_per_token(8, 8, 128), 5.339356895383487, 1e-9);
  EXPECT_EQ(ranks_per_token(1, 8, 128), 1.0);
}

TEST(EpDispatch, AMeasuredDispatcherRateIsTakenAtTheNearestRankCount) {
  Cluster c = tiny_cluster(8);
  auto rate = [](const char* d, long ranks, double bw) {
    DispatcherRate r;
    r.dispatcher = d;
    r.ranks = ranks;
    r.sms = 32;
    r.dispatch_bf16 = r.dispatch_fp8 = r.combine = bw;
    r.source = "test";
    return r;
  };
  c.ep_dispatch_rates = {rate("hybridep", 8, 1), rate("hybridep", 16, 2), rate("hybridep", 32, 3),
                         rate("hybridep", 36, 4), rate("deepep", 8, 5)};
  EXPECT_EQ(c.dispatch_rate("hybridep", 8)->dispatch_bf16, 1);
  EXPECT_EQ(c.dispatch_rate("hybridep", 12)->dispatch_bf16, 2);  // 8 and 16 equally near: the larger
  EXPECT_EQ(c.dispatch_rate("hybridep", 24)->dispatch_bf16, 3);  // 16 and 32 equally near: the larger
  EXPECT_EQ(c.dispatch_rate("hybridep", 64)->dispatch_bf16, 4);
  EXPECT_EQ(c.dispatch_rate("deepep", 64)->dispatch_bf16, 5);
  c.ep_dispatch_rates.pop_back();
  EXPECT_EQ(c.dispatch_rate("deepep", 8), nullptr);
}

TEST(EpDispatch, AMeasuredRateInsideTheDomainChargesTheBytesEachRankReceives) {
  // One MoE layer of 128 experts (top 8) on EP 8 inside one node of the tiny cluster (NVLink
  // 100 GB/s, efficiency 1). The plain all-to-all sends each of t tokens 8 copies, 7/8 of them
  // off the rank: 7 t d 2 B at 100 GB/s, each way. With a measured DeepEP rate of 50 GB/s
  // dispatch and 25 GB/s combine a rank receives t x 5.3394 (above) tokens of d x 2 B each
  // way: 5.3394 (1/50 + 1/25) / (2 x 7 / 100) = 2.2883 times the plain time.
  model::ModelConfig moe = tiny_moe(1, 128, 8);
  Cluster c = tiny_cluster(1);
  Strategy s;
  s.ep = 8;
  double plain = predict(moe, c, make_run(1024, 8), s).time.ep_comm;
  s.moe_dispatcher = MoeDispatcher::kDeepEp;
  EXPECT_NEAR(predict(moe, c, make_run(1024, 8), s).time.ep_comm, plain, 1e-12) << "no measurement: the link's rate";
  DispatcherRate r;
  r.dispatcher = "deepep";
  r.ranks = 8;
  r.sms = 24;
  r.dispatch_bf16 = 50e9;
  r.dispatch_fp8 = 40e9;
  r.combine = 25e9;
  r.source = "test";
  c.ep_dispatch_rates = {r};
  double measured = predict(moe, c, make_run(1024, 8), s).time.ep_comm;
  ASSERT_GT(plain, 0);
  EXPECT_NEAR(measured / plain, 5.339356895383487 * (1 / 50.0 + 1 / 25.0) / (2 * 7 / 100.0), 1e-9);
  // A HybridEP run does not take DeepEP's measurement, nor the plain all-to-all either.
  s.moe_dispatcher = MoeDispatcher::kHybridEp;
  EXPECT_NEAR(predict(moe, c, make_run(1024, 8), s).time.ep_comm, plain, 1e-12);
  s.moe_dispatcher = MoeDispatcher::kAllToAll;
  EXPECT_NEAR(predict(moe, c, make_run(1024, 8), s).time.ep_comm, plain, 1e-12);
  // An EP group wider than the domain keeps the link model (the measurements are in-domain).
  Cluster two = tiny_cluster(2);
  two.ep_dispatch_rates = {r};
  Strategy wide;
  wide.ep = 16;
  wide.moe_dispatcher = MoeDispatcher::kDeepEp;
  double linked = predict(moe, two, make_run(1024, 16), wide).time.ep_comm;
  two.ep_dispatch_rates.clear();
  EXPECT_NEAR(predict(moe, two, make_run(1024, 16), wide).time.ep_comm, linked, 1e-12);
}

TEST(EpDispatch, AnFp8RunDispatchesInFp8OnlyWhereItsStackQuantizesBeforeTheDispatch) {
  // One MoE layer, EP 8 inside a node, no peer latency or launch cost: every all-to-all is
  // bytes / 100 GB/s, so the EP time is (dispatch + combine) x passes. BF16 dispatch and combine
  // carry the same bytes; an FP8 dispatch half of them: FP8 / BF16 EP time = (1 + 2) / (2 + 2).
  // Megatron-Core sends BF16 hidden states whatever the GEMM precision (stack.h), DeepSeek-V3
  // quantizes first (its stack sets moe_fp8_dispatch).
  model::ModelConfig moe = tiny_moe(1, 128, 8);
  Cluster c = tiny_cluster(1);
  c.device.peak.flops_fp8 = core::Quantity{200e12, "test", {}};
  Strategy s;
  s.ep = 8;
  plan::Run bf16 = make_run(1024, 8), fp8 = bf16;
  fp8.fp8_matmul = true;
  double base = predict(moe, c, bf16, s).time.ep_comm;
  ASSERT_GT(base, 0);
  EXPECT_NEAR(predict(moe, c, fp8, s).time.ep_comm, base, 1e-12);
  s.stack.moe_fp8_dispatch = true;
  EXPECT_NEAR(predict(moe, c, fp8, s).time.ep_comm / base, 3.0 / 4.0, 1e-9);
  EXPECT_NEAR(predict(moe, c, bf16, s).time.ep_comm, base, 1e-12);
  // The shipped profiles: DeepSeek-V3's quantizes first, Megatron-Core's does not.
  EXPECT_TRUE(load_stack(testing::source_path("configs/plan/stack/hai-llm.toml")).moe_fp8_dispatch);
  EXPECT_FALSE(load_stack(testing::source_path("configs/plan/stack/megatron-core.toml")).moe_fp8_dispatch);
}

TEST(EpDispatch, AMeasuredFp8DispatchCountsItsScalesAsTheMeasurementDoes) {
  // DeepEP's and HybridEP's tests count an FP8 dispatch's bytes with its scales, one fp32 per
  // 128 elements: 1 + 4/128 B an element. With measured rates of 50 GB/s (BF16 dispatch), 40
  // GB/s (FP8 dispatch) and 25 GB/s (combine) for the same tokens, FP8 / BF16 EP time =
  // (1.03125 / 40 + 2 / 25) / (2 / 50 + 2 / 25) = 0.10578125 / 0.12.
  model::ModelConfig moe = tiny_moe(1, 128, 8);
  Cluster c = tiny_cluster(1);
  c.device.peak.flops_fp8 = core::Quantity{200e12, "test", {}};
  DispatcherRate r;
  r.dispatcher = "hybridep";
  r.ranks = 8;
  r.sms = 32;
  r.dispatch_bf16 = 50e9;
  r.dispatch_fp8 = 40e9;
  r.combine = 25e9;
  r.source = "test";
  c.ep_dispatch_rates = {r};
  Strategy s;
  s.ep = 8;
  s.moe_dispatcher = MoeDispatcher::kHybridEp;
  s.stack.moe_fp8_dispatch = true;
  plan::Run bf16 = make_run(1024, 8), fp8 = bf16;
  fp8.fp8_matmul = true;
  double base = predict(moe, c, bf16, s).time.ep_comm;
  ASSERT_GT(base, 0);
  EXPECT_NEAR(predict(moe, c, fp8, s).time.ep_comm / base, 0.10578125 / 0.12, 1e-9);
}

}  // namespace
}  // namespace trex::plan
