// The anatomy on hand-built traces whose head, tail, categories, pipe ratios and roofline
// positions are known in closed form.
#include <gtest/gtest.h>

#include "trex/profile/anatomy.h"

namespace trex::profile {
namespace {

void launches(KernelTrace& t, const std::string& name, int n, double dur_us, double flops = 0, double bytes = 0) {
  for (int i = 0; i < n; ++i) {
    KernelRecord r;
    r.name = name;
    r.trace_kind = "kernel";
    r.dur_us = dur_us;
    r.flops = flops;
    r.bytes = bytes;
    t.kernels.push_back(r);
  }
}

// matmul 800 us in 2 launches, attention 150 in 1, communication 100 in 1, elementwise 50 in
// 10, cast 40 in 20; a 1500 us timeline.
KernelTrace step() {
  KernelTrace t;
  t.path = "step.json";
  t.format = "kineto";
  launches(t, "sm80_xmma_gemm_f16", 2, 400, 2e8, 2e6);
  launches(t, "flash_fwd_kernel", 1, 150);
  launches(t, "ncclDevKernel_AllReduce_Sum", 1, 100);
  launches(t, "vectorized_elementwise_kernel<AddFunctor>", 10, 5, 0, 2e5);
  launches(t, "aten::_to_copy", 20, 2);
  t.window_us = 1500;
  t.busy_us = 1140;
  return t;
}

const KernelSummary& by_name(const Anatomy& a, const std::string& name) {
  for (const KernelSummary& k : a.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no kernel " + name);
}

TEST(Anatomy, HeavyHeadTailAndRoutes) {
  Anatomy a = analyze({step()});
  EXPECT_EQ(a.launches, 34);
  EXPECT_DOUBLE_EQ(a.kernel_us, 1140);
  EXPECT_DOUBLE_EQ(a.idle_us, 360);
  ASSERT_EQ(a.kernels.size(), 5u);
  EXPECT_EQ(a.kernels[0].name, "sm80_xmma_gemm_f16");  // largest first
  // The 80% prefix is gemm + flash attention (950 of 1140 us).
  EXPECT_EQ(a.head_kernels, 2);
  EXPECT_DOUBLE_EQ(a.head_share, 950.0 / 1140);
  EXPECT_EQ(by_name(a, "sm80_xmma_gemm_f16").route, kRouteTuneTiling);
  EXPECT_EQ(by_name(a, "flash_fwd_kernel").route, kRouteTuneTiling);
  EXPECT_EQ(by_name(a, "ncclDevKernel_AllReduce_Sum").route, kRouteOverlap);
  EXPECT_EQ(by_name(a, "aten::_to_copy").route, kRouteFuse);
  EXPECT_EQ(by_name(a, "vectorized_elementwise_kernel<AddFunctor>").route, kRouteFuse);
  // Fragmentation: 32 of 34 launches are not matmul, with 340 of 1140 us; 30 launches under 20 us.
  EXPECT_DOUBLE_EQ(a.non_matmul_launch_share, 32.0 / 34);
  EXPECT_DOUBLE_EQ(a.non_matmul_time_share, 340.0 / 1140);
  EXPECT_EQ(a.short_launches, 30);
  EXPECT_DOUBLE_EQ(a.short_launch_share, 30.0 / 34);
  EXPECT_DOUBLE_EQ(a.short_time_share, 90.0 / 1140);
  EXPECT_DOUBLE_EQ(a.category_us[int(KernelCategory::kMatmul)], 800);
  EXPECT_DOUBLE_EQ(a.category_us[int(KernelCategory::kAttention)], 150);
  EXPECT_DOUBLE_EQ(a.category_us[int(KernelCategory::kCommunication)], 100);
  EXPECT_DOUBLE_EQ(a.category_us[int(KernelCategory::kElementwise)], 50);
  EXPECT_DOUBLE_EQ(a.category_us[int(KernelCategory::kCast)], 40);
  EXPECT_DOUBLE_EQ(by_name(a, "aten::_to_copy").median_us, 2);
}

TEST(Anatomy, AKernelOfShortLaunchesIsNeverHead) {
  KernelTrace t;
  t.format = "kineto";
  launches(t, "vectorized_elementwise_kernel<MulFunctor>", 1000, 5);  // 5 ms of 5 us launches
  launches(t, "sm80_xmma_gemm", 1, 1000);
  t.window_us = t.busy_us = 6000;
  Anatomy a = analyze({t});
  EXPECT_EQ(a.kernels[0].route, kRouteFuse);
  EXPECT_FALSE(a.kernels[0].heavy_head);
  EXPECT_EQ(a.head_kernels, 1);
}

TEST(Anatomy, RooflineRegimes) {
  AnatomyOptions o;
  Roofline r;
  r.device = "test";
  r.peak_flops = 1e12;
  r.bytes_per_s = 1e11;  // ridge 10 FLOP/B
  o.roofline = r;
  Anatomy a = analyze({step()}, o);
  const KernelSummary& gemm = by_name(a, "sm80_xmma_gemm_f16");
  EXPECT_EQ(gemm.regime, "compute-bound");
  EXPECT_DOUBLE_EQ(gemm.intensity, 100);
  EXPECT_DOUBLE_EQ(gemm.roof_fraction, 400.0 / 800);  // 4e8 FLOP at 1e12/s = 400 us, measured 800
  const KernelSummary& add = by_name(a, "vectorized_elementwise_kernel<AddFunctor>");
  EXPECT_EQ(add.regime, "memory-bound");
  EXPECT_DOUBLE_EQ(add.roof_fraction, 20.0 / 50);  // 2e6 B at 1e11 B/s = 20 us, measured 50
  EXPECT_EQ(by_name(a, "flash_fwd_kernel").regime, "unknown");  // no counts in the trace
}

TEST(Anatomy, DurationWeightedPipeRatios) {
  KernelTrace t;
  t.format = "msprof";
  auto add = [&](const std::string& type, double dur, double vec, double mte2, double mte3) {
    KernelRecord r;
    r.name = type + "_node";
    r.op_type = type;
    r.dur_us = dur;
    r.pipe_ratios = {{"aiv_vec_ratio", vec}, {"aiv_mte2_ratio", mte2}, {"aiv_mte3_ratio", mte3}};
    t.kernels.push_back(r);
  };
  add("Cast", 100, 0.2, 0.7, 0.3);
  add("Cast", 300, 0.1, 0.5, 0.2);
  add("Mul", 100, 0.3, 0.4, 0.1);
  t.window_us = t.busy_us = 500;
  Anatomy a = analyze({t});
  const KernelSummary& cast = by_name(a, "Cast");  // grouped by operator type
  EXPECT_EQ(cast.launches, 2);
  EXPECT_DOUBLE_EQ(cast.pipe_ratios.at("aiv_mte2_ratio"), (70.0 + 150) / 400);
  EXPECT_EQ(cast.regime, "load-bound");
  EXPECT_EQ(by_name(a, "Mul").regime, "overlap-bound");  // no pipe above 0.5
  EXPECT_NEAR(a.pipe_ratios.at("aiv_vec_ratio"), (20.0 + 30 + 30) / 500, 1e-12);
  EXPECT_NEAR(a.movement_over_vector, ((70.0 + 150 + 40) + (30.0 + 60 + 10)) / (20.0 + 30 + 30), 1e-12);
}

TEST(Anatomy, TracesAddUp) {
  Anatomy a = analyze({step(), step()});
  EXPECT_EQ(a.launches, 68);
  EXPECT_DOUBLE_EQ(a.window_us, 3000);
  EXPECT_DOUBLE_EQ(a.idle_us, 720);
  EXPECT_EQ(a.traces.size(), 2u);
}

}  // namespace
}  // namespace trex::profile
