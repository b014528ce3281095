// One test per cause of issue 17 (docs/plan.md, "Issue 17's causes and the tests that show them"):
// each shows the cause's effect on a small case whose answer is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "plan/plan_test_util.h"
#include "trex/plan/collectives.h"
#include "trex/plan/gemm_efficiency.h"
#include "trex/plan/in_flight.h"
#include "trex/plan/overlap.h"
#include "trex/plan/pipeline_layout.h"
#include "trex/plan/predict.h"
#include "trex/plan/roofs.h"
#include "trex/plan/scale_losses.h"
#include "trex/plan/stack.h"
#include "trex/plan/strategy_toml.h"
#include "trex/plan/validation.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::make_run;
using testing::shipped_cluster;
using testing::shipped_model;
using testing::source_path;
using testing::tiny_cluster;
using testing::tiny_moe;

// A stack file "[stack] name, source" plus `fields`, loaded from a temporary file.
StackProfile stack_from(const std::string& fields) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("trex-causes-stack-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path) << "[stack]\nname = \"x\"\nsource = \"s\"\n" << fields;
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{path};
  return load_stack(path);
}

// A stack that sets `field` without its source field is refused, naming `source_field`.
void expect_refused_without_source(const std::string& field, const std::string& source_field) {
  try {
    stack_from(field + " = true\n");
    ADD_FAILURE() << "an unsourced " << field << " was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(source_field), std::string::npos) << e.what();
  }
}

// A stack that gives `source_field` while `field` is false (or absent) is refused, naming the source.
void expect_refused_source_without_claim(const std::string& field, const std::string& source_field) {
  for (const std::string claim : {std::string(), field + " = false\n"}) {
    try {
      stack_from(claim + source_field + " = \"a paper\"\n");
      ADD_FAILURE() << source_field << " was accepted with " << (claim.empty() ? field + " absent" : claim);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(source_field), std::string::npos) << e.what();
    }
  }
}

// A two-layer GPT-style model: d 1024, 8 heads of 128, FFN 4096 (GELU), vocabulary 32000.
model::ModelConfig tiny_gpt(int layers = 2) {
  return model::parse_model_config("[model]\nname = \"tiny\"\nvocab = 32000\nhidden = 1024\nlayers = " + std::to_string(layers) +
                                       "\ntrain_seq_len = 1024\n[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\n"
                                       "head_dim = 128\nrope_dims = 128\n[ffn]\nactivation = \"gelu\"\nhidden = 4096\n",
                                   "tiny.toml");
}

// (1) MoE all-to-all overlap is a property of the schedule and of the compute that can hide it.
TEST(Causes, MoeAllToAllHidesBehindTheComputeOfOtherMicroBatches) {
  // 8 micro-batches on one stage: warm-up and cool-down take one, 7/8 are steady.
  EXPECT_DOUBLE_EQ(steady_share(8, 1), 7.0 / 8);
  EXPECT_DOUBLE_EQ(steady_share(240, 16), 224.0 / 240);
  // DualPipe: 10 ms of all-to-all against 30 ms of compute: capacity 7/8 x 30 = 26.25 ms hides
  // all of it; the SMs that DeepEP-style kernels take (15%) cost 0.15 x 10 = 1.5 ms.
  EXPECT_NEAR(exposed_a2a(0.010, 0.030, 7.0 / 8, MoeOverlap::kDualPipe, 0, 0.15), 0.0015, 1e-12);
  // Too little compute to hide it: 50 ms against 0.5 x 30 = 15 ms leaves 35 ms exposed.
  EXPECT_NEAR(exposed_a2a(0.050, 0.030, 0.5, MoeOverlap::kDualPipe, 0, 0), 0.035, 1e-12);
  // No overlapping schedule: only the stated share is hidden.
  EXPECT_NEAR(exposed_a2a(0.010, 0.030, 7.0 / 8, MoeOverlap::kNone, 0.25, 0.15), 0.0075, 1e-12);
  // EP inside the NVLink domain vs across it, 80 MB sent per rank: EP 8 in one node sends 7/8
  // of it at 100 GB/s = 0.7 ms; EP 16 over two nodes sends 8/16 over 10 GB/s = 4 ms.
  Cluster c = tiny_cluster(2);
  EXPECT_NEAR(all_to_all_s(c, 8, 1, 80e6), 0.7e-3, 1e-12);
  EXPECT_NEAR(all_to_all_s(c, 16, 1, 80e6), 4e-3, 1e-12);
}

// (1) Combined 1F1B pairs each all-to-all with one compute node of the other micro-batch, so
// plenty of compute in total does not hide an exchange longer than the node it runs under.
TEST(Causes, CombinedOneFOneBHidesEachAllToAllOnlyBehindItsPairedNode) {
  // One MoE layer, ms: F.attn 1.0, B.attn 2.0, F.expert 1.5, B.expert 3.0; dispatch 1.2, combine
  // 1.6 (each backward moves 1.6); the concurrent compute runs 20% slower while they overlap.
  MoeLayerPhases p;
  p.attn_fwd = 1.0e-3, p.attn_bwd = 2.0e-3, p.expert_fwd = 1.5e-3, p.expert_bwd = 3.0e-3;
  p.dispatch = 1.2e-3, p.combine = 1.6e-3;
  // B.combine 1.6 under F.attn 1.0: 0.6 exposed (more than 0.2 x 1.6 = 0.32);
  // F.dispatch 1.2 under B.expert 3.0: 0.2 x 1.2 = 0.24; B.dispatch 1.6 under F.expert 1.5:
  // max(0.1, 0.32) = 0.32; F.combine 1.6 under B.attn 2.0: 0.32. Sum 1.48 ms.
  EXPECT_NEAR(exposed_a2a_paired(p, 0, 0.2), 1.48e-3, 1e-12);
  // A quarter of the passes unpaired (warm-up, cool-down): 0.25 x (2.8 + 3.2) + 0.75 x 1.48 = 2.61.
  EXPECT_NEAR(exposed_a2a_paired(p, 0.25, 0.2), 2.61e-3, 1e-12);
  // The aggregate rule (DualPipe's) hides 0.75 x 7.5 = 5.625 of the 6.0 ms: 0.375 + 0.2 x 5.625 = 1.5.
  EXPECT_NEAR(exposed_a2a(6.0e-3, 7.5e-3, 0.75, MoeOverlap::kDualPipe, 0, 0.2), 1.5e-3, 1e-12);
  // Unpaired share: no pipeline, 8 micro-batches: the first forward, 1/8. PP 4 without
  // interleaving, rank 0: 4/8. PP 8 x VPP 4, 128 micro-batches: rank 0 warms up
  // 7 x 2 + 3 x 8 + 1 = 39 of 512 chunks, rank 7 0 + 24 + 1 = 25. Too few micro-batches: all.
  EXPECT_DOUBLE_EQ(unpaired_share(8, 1, 1, 0), 1.0 / 8);
  EXPECT_DOUBLE_EQ(unpaired_share(8, 4, 1, 0), 4.0 / 8);
  EXPECT_DOUBLE_EQ(unpaired_share(128, 8, 4, 0), 39.0 / 512);
  EXPECT_DOUBLE_EQ(unpaired_share(128, 8, 4, 7), 25.0 / 512);
  EXPECT_DOUBLE_EQ(unpaired_share(4, 8, 4, 0), 1.0);
}

// (2) GEMM efficiency depends on the shape; FP8 has its own efficiency, well below 2x BF16.
TEST(Causes, SmallExpertGemmsRunFarBelowPeakAndFp8IsBelowTwiceBf16) {
  // DeepGEMM's m = 64, n = 2112, k = 7168 on H800: c(x) = x / (x + 384):
  // 64/448 x 2112/2496 x 7168/7552 / (8192/8576)^3 = 0.142857 x 0.846154 x 0.949153 / 0.871593 = 0.13164
  EXPECT_NEAR(gemm_shape_factor(64, 2112, 7168, 384), 0.13164, 1e-4);
  EXPECT_DOUBLE_EQ(gemm_shape_factor(8192, 8192, 8192, 384), 1.0);
  EXPECT_DOUBLE_EQ(gemm_shape_factor(64, 64, 64, 0), 1.0);  // curve off
  // A GEMM of 512 rows is slower per FLOP than one of 8192 (a grouped GEMM's m is all its
  // experts' rows, (2c) below; one kernel per expert, each expert's):
  // c(512)/c(8192) = (512/896)/(8192/8576) = 0.5982
  EXPECT_NEAR(gemm_shape_factor(512, 8192, 8192, 384), 0.5714286 / 0.9552239, 1e-6);
  // H100 (dgx-h100.toml): large GEMMs BF16 0.70 x 989 = 692.3 TFLOPS, FP8 0.75 x 1979 =
  // 1484.25 TFLOPS (2.14x at the roof). What an FP8 GEMM gains is far less (below).
  Roofs h = roofs(shipped_cluster("dgx-h100"), StackProfile{});
  EXPECT_NEAR(h.matmul, 692.3e12, 1e9);
  EXPECT_NEAR(h.fp8, 1484.25e12, 1e9);
  // The half dimension follows the per-SM tensor rate (a fixed cost per output tile): stated
  // 384 at H800 FP8's 15 TFLOPS per SM, BF16 on the same 132 SMs (989 / 132 = 7.49 TFLOPS)
  // gives 384 x 7.49 / 15 = 191.81, A100 BF16 (312 / 108 = 2.89 TFLOPS) 73.9.
  EXPECT_NEAR(gemm_half_dim_for(384, 15e12, 989e12 / 132), 191.81, 0.01);
  EXPECT_NEAR(gemm_half_dim_for(384, 15e12, 312e12 / 108), 73.95, 0.01);
  EXPECT_DOUBLE_EQ(gemm_half_dim_for(128, 0, 312e12 / 108), 128);  // no reference rate: as stated
  // So a k = 768 GEMM (m, n large) loses more to its shape in FP8 than in BF16 on H100:
  // c(768) at h = 384: 768/1152 / (8192/8576) = 0.6979; at h = 191.8: 0.80013 / 0.97712 = 0.8189.
  EXPECT_NEAR(gemm_shape_factor(8192, 8192, 768, 384), 0.6979, 1e-4);
  EXPECT_NEAR(gemm_shape_factor(8192, 8192, 768, 191.81), 0.8189, 1e-4);
  // One 8192 x 4096 x 4096 GEMM (5.4976e11 FLOPs) on H100 (dgx-h100.toml: h 384, hk 768 at
  // 15 TFLOPS per SM): BF16 at h 191.81, hk 383.61, shape 4096/4287.81 x 4096/4479.61 /
  // (8192/8383.81 x 8192/8575.61) = 0.93577, 0.42431 ms; FP8 at h 383.81, hk 767.62, shape
  // 0.88163, 0.21007 ms, plus its input cast under current scaling, 6 B x 8192 x 4096 at
  // 0.8 x 3.35 TB/s = 0.07512 ms: 0.42431 / 0.28518 = 1.488x, not 2x.
  const Cluster& h100 = shipped_cluster("dgx-h100");
  EXPECT_DOUBLE_EQ(h100.eff.gemm_half_dim, 384);
  EXPECT_DOUBLE_EQ(h100.eff.gemm_half_dim_k, 768);
  double flops = 2.0 * 8192 * 4096 * 4096;
  double t_bf16 = flops / (h.matmul * gemm_shape_factor(8192, 4096, 4096, gemm_half_dim_for(384, 15e12, 989e12 / 132),
                                                         gemm_half_dim_for(768, 15e12, 989e12 / 132)));
  double t_fp8 = flops / (h.fp8 * gemm_shape_factor(8192, 4096, 4096, gemm_half_dim_for(384, 15e12, 1979e12 / 132),
                                                     gemm_half_dim_for(768, 15e12, 1979e12 / 132))) +
                 6.0 * 8192 * 4096 / h.memory;
  EXPECT_NEAR(t_bf16, 0.42431e-3, 1e-7);
  EXPECT_NEAR(t_fp8, 0.28518e-3, 1e-7);
  EXPECT_NEAR(t_bf16 / t_fp8, 1.488, 1e-3);
}

// (2c) The inner dimension has its own half dimension (a tile's prologue and epilogue against its
// k loop), and a grouped GEMM fills the SMs with every expert's tiles, so its m curve sees all
// its rows. Checked against DeepGEMM's published H800 FP8 rates (deepseek-ai/DeepGEMM README),
// which the H100/H800 clusters' 0.75 x 1979 = 1484.25 TFLOPS and h 384, hk 768 stand for.
TEST(Causes, TheInnerDimensionHasItsOwnHalfDimensionAndAGroupedGemmSeesAllItsRows) {
  // 4096 x 7168 x 2048 (m, n, k): c384(4096) = 4096/4480 = 0.914286, c384(7168) = 7168/7552 =
  // 0.949153, c768(2048) = 2048/2816 = 0.727273; against c384(8192)^2 c768(8192) = (8192/8576)^2
  // x 8192/8960 = 0.912453 x 0.914286 = 0.834242: 0.631125 / 0.834242 = 0.756524, 1122.9 TFLOPS against
  // DeepGEMM's 1025 (+9.5%; with one h of 384 for k too: 0.838433, 1244.4, +21%).
  EXPECT_NEAR(gemm_shape_factor(4096, 7168, 2048, 384, 768), 0.756524, 1e-6);
  EXPECT_NEAR(gemm_shape_factor(4096, 7168, 2048, 384), 0.838433, 1e-6);
  EXPECT_NEAR(1484.25 * gemm_shape_factor(4096, 7168, 2048, 384, 768), 1122.9, 0.1);
  // k 512 (n 32768): c768(512) = 0.4, c384(32768) = 0.988417: 0.914286 x 0.988417 x 0.4 / 0.834243
  // = 0.433301, 643.1 TFLOPS against 590 (+9.0%; one h: 0.592473, 879.4, +49%).
  EXPECT_NEAR(gemm_shape_factor(4096, 32768, 512, 384, 768), 0.433301, 1e-6);
  EXPECT_NEAR(1484.25 * gemm_shape_factor(4096, 32768, 512, 384), 879.4, 0.1);
  // hk < 0 is h itself (the clusters that state no hk).
  EXPECT_DOUBLE_EQ(gemm_shape_factor(512, 4096, 1024, 384, -1), gemm_shape_factor(512, 4096, 1024, 384));
  // DeepGEMM's masked grouped GEMM, 4 experts of 256 rows, n 4096, k 7168: one kernel, so m =
  // 1024 rows: c384(1024) = 0.727273 x c384(4096) 0.914286 x c768(7168) 0.903226 / 0.834243 =
  // 0.719918, 1068.5 TFLOPS against its 932 (+14.6%); per expert (m = 256, c384 = 0.4) it was
  // 0.395955, 587.7 (-37%).
  EXPECT_DOUBLE_EQ(grouped_gemm_curve_rows(1024, 4, 1), 1024);
  EXPECT_DOUBLE_EQ(grouped_gemm_curve_rows(1024, 4, 4), 256);  // one kernel per expert
  EXPECT_NEAR(gemm_shape_factor(grouped_gemm_curve_rows(1024, 4, 1), 4096, 7168, 384, 768), 0.719918, 1e-6);
  EXPECT_NEAR(gemm_shape_factor(grouped_gemm_curve_rows(1024, 4, 4), 4096, 7168, 384, 768), 0.395955, 1e-6);
  EXPECT_NEAR(1484.25 * gemm_shape_factor(1024, 4096, 7168, 384, 768), 1068.5, 0.1);
}

// (2b) Many local experts make an eager MoE layer host-bound: each pass of a MoE layer takes
// max(GPU time, host time), the host time being the stack's seconds per local expert x the
// experts on the rank (Transformer Engine's GroupedLinear works expert by expert; the dropless
// dispatcher's device-to-host sync keeps the GPU from running ahead).
TEST(Causes, ManyLocalExpertsMakeMoeLayersHostBound) {
  // Two MoE layers of 16 experts (top 2, width 256) on d 1024, EP 2 on 2 devices: 8 experts a
  // rank. At 1 s and 2 s per expert the host takes 8 s and 16 s per layer pass, far above the
  // GPU's microseconds, so every forward and backward pass of both layers runs at the host's
  // pace: the step grows by 2 layers x 2 passes x 8 experts x (2 - 1) s x 4 micro-batches = 128 s.
  model::ModelConfig moe = tiny_moe(2, 16, 2);
  Cluster c = tiny_cluster(1);
  set_nodes(c, 1);
  c.devices_per_node = 2;
  c.links[0].group_size = 2;
  auto step = [&](double per_expert) {
    Strategy s;
    s.ep = 2;
    s.stack.moe_host_per_expert_s = per_expert;
    return predict(moe, c, make_run(1024, 8), s).time;
  };
  TimeBreakdown one = step(1), two = step(2), off = step(0);
  EXPECT_NEAR(two.launch - one.launch, 128.0, 1e-6);
  // Against no host floor: the excess is 8 s per pass minus the GPU's own time of that pass.
  EXPECT_GT(one.launch - off.launch, 128.0 - 0.01);
  EXPECT_LT(one.launch - off.launch, 128.0);
}

// (2c) A run without CUDA graphs over a MoE layer's attention, router and EP preprocessing
// (cuda_graphs = "none") exposes the stack's moe_host_eager_s per MoE layer and micro-batch on
// top of whatever else the layer takes (the published gain of capturing them, megatron-core.toml).
TEST(Causes, EagerMoeLayersExposeTheirHostWorkOnTopOfTheGpu) {
  // The case above: 2 MoE layers, 4 micro-batches a replica. At 1 s per layer and micro-batch,
  // half forward and half backward, the step grows by 2 x 4 x 1 s = 8 s, all of it in the
  // launch line; with or without the per-expert floor (additive, not a max), and never when
  // the run captures those parts (cuda_graphs = "partial", the default). Full recomputation
  // runs each forward again: 2 x 4 x 0.5 s = 4 s more.
  model::ModelConfig moe = tiny_moe(2, 16, 2);
  Cluster c = tiny_cluster(1);
  set_nodes(c, 1);
  c.devices_per_node = 2;
  c.links[0].group_size = 2;
  auto step = [&](bool graphs, double eager, double per_expert, Recompute rc = Recompute::kNone) {
    Strategy s;
    s.ep = 2;
    s.moe_cuda_graphs = graphs;
    s.recompute = rc;
    s.stack.moe_host_eager_s = eager;
    s.stack.moe_host_per_expert_s = per_expert;
    return predict(moe, c, make_run(1024, 8), s).time;
  };
  EXPECT_NEAR(step(false, 1, 0).launch - step(true, 1, 0).launch, 8.0, 1e-9);
  EXPECT_GE(step(false, 1, 0).step - step(true, 1, 0).step, 8.0 - 1e-9);  // plus the proportional losses
  EXPECT_NEAR(step(false, 1, 1).launch - step(true, 1, 1).launch, 8.0, 1e-9);
  EXPECT_NEAR(step(false, 0, 0).launch, step(true, 0, 0).launch, 1e-12);
  EXPECT_NEAR(step(false, 1, 0, Recompute::kFull).launch - step(true, 1, 0, Recompute::kFull).launch, 12.0, 1e-9);
  // The shipped stack: 2.07 ms (NVIDIA/Megatron-LM deepseek-v3-gb200-optimization.md: 610.71 ->
  // 663.27 TFLOPS/GPU with CUDA graphs = 1.061 s a step over 64 micro-batches x 8 MoE layers).
  StackProfile mc = load_stack(source_path("configs/plan/stack/megatron-core.toml"));
  EXPECT_NEAR(mc.moe_host_eager_s, 1.061 / (64 * 8), 1e-5);
}

// (2c') The plain all-to-all dispatcher run eagerly (cuda_graphs = "none") exposes its own router
// and preprocessing host work, the stack's moe_host_alltoall_s per MoE layer and micro-batch, on
// top of moe_host_eager_s; DeepEP's fused dispatch does not, nor does a run with CUDA graphs.
TEST(Causes, EagerAllToAllDispatchExposesItsHostWorkOnTopOfTheEagerLayer) {
  // The case of (2c): 2 MoE layers, 4 micro-batches a replica. moe_host_alltoall_s 1 s:
  // 2 x 4 x 1 s = 8 s more launch line with the all-to-all than with DeepEP, eager or not
  // (eager 0.5 s adds 2 x 4 x 0.5 = 4 s to both); nothing under CUDA graphs.
  model::ModelConfig moe = tiny_moe(2, 16, 2);
  Cluster c = tiny_cluster(1);
  set_nodes(c, 1);
  c.devices_per_node = 2;
  c.links[0].group_size = 2;
  auto launch = [&](bool graphs, MoeDispatcher d, double eager, double alltoall) {
    Strategy s;
    s.ep = 2;
    s.moe_cuda_graphs = graphs;
    s.moe_dispatcher = d;
    s.stack.moe_host_eager_s = eager;
    s.stack.moe_host_alltoall_s = alltoall;
    return predict(moe, c, make_run(1024, 8), s).time.launch;
  };
  const MoeDispatcher a2a = MoeDispatcher::kAllToAll, deepep = MoeDispatcher::kDeepEp;
  EXPECT_NEAR(launch(false, a2a, 0, 1) - launch(false, deepep, 0, 1), 8.0, 1e-9);
  EXPECT_NEAR(launch(false, a2a, 0.5, 1) - launch(false, deepep, 0.5, 1), 8.0, 1e-9);
  EXPECT_NEAR(launch(false, deepep, 0.5, 1) - launch(true, deepep, 0.5, 1), 4.0, 1e-9);
  EXPECT_NEAR(launch(true, a2a, 0.5, 1), launch(true, deepep, 0.5, 1), 1e-12);
  EXPECT_NEAR(launch(false, a2a, 0, 0), launch(false, deepep, 0, 0), 1e-12);
  // The shipped stacks: 1.36 ms (NVIDIA/Megatron-LM deepseek-v3-gb200-optimization.md, "Enable
  // DeepEP": 540.00 -> 566.07 TFLOPS/GPU at 249.6 GFLOP x 32,768 tokens a GPU a step = 15.146 s
  // -> 14.449 s, 0.698 s over 64 micro-batches x 8 MoE layers).
  for (const char* stack : {"megatron-core", "megatron-core-0.6-hopper", "megatron-core-0.4-hopper"}) {
    StackProfile mc = load_stack(source_path(std::string("configs/plan/stack/") + stack + ".toml"));
    EXPECT_NEAR(mc.moe_host_alltoall_s, 249.6e9 * 32768 * (1 / 540.00e12 - 1 / 566.07e12) / (64 * 8), 1e-5) << stack;
  }
}

// (2d) Drop-and-pad (Megatron-Core --moe-pad-expert-input-to-capacity) gives every expert its
// capacity, a count the host knows, so the dispatcher never waits for counts copied from the
// device (token_dispatcher.py: cuda_sync_point stays "no_sync") and the host runs ahead across
// layers: a pass shows only the excess of its host time over the GPU time of the whole pass,
// not each MoE layer's excess over that layer's GPU time.
TEST(Causes, DropAndPadLetsTheHostRunAheadAcrossLayers) {
  // The case of (2b): 2 MoE layers of 16 experts on EP 2, 8 experts a rank, 4 micro-batches,
  // 100 TFLOPS. Host far above GPU (1 s and 2 s per expert): every pass is host-bound either
  // way, and the step grows by 2 layers x 2 passes x 8 experts x 1 s x 4 micro-batches = 128 s
  // from 1 s to 2 s, dropless or drop-and-pad.
  model::ModelConfig moe = tiny_moe(2, 16, 2);
  Cluster c = tiny_cluster(1);
  set_nodes(c, 1);
  c.devices_per_node = 2;
  c.links[0].group_size = 2;
  auto step = [&](double per_expert, MoeTokenDrop drop, double eager = 0) {
    Strategy s;
    s.ep = 2;
    s.moe_token_drop = drop;
    s.moe_cuda_graphs = eager == 0;
    s.stack.moe_host_eager_s = eager;
    s.stack.moe_host_per_expert_s = per_expert;
    return predict(moe, c, make_run(1024, 8), s).time;
  };
  const MoeTokenDrop pad = MoeTokenDrop::kDropAndPad, dropless = MoeTokenDrop::kDropless;
  EXPECT_NEAR(step(2, pad).launch - step(1, pad).launch, 128.0, 1e-6);
  EXPECT_NEAR(step(2, dropless).launch - step(1, dropless).launch, 128.0, 1e-6);
  // Host between a MoE layer's GPU time and the whole pass's: 37.5 us x 8 = 0.3 ms a layer
  // pass, 0.6 ms for both layers. A MoE layer's forward is under 16 GFLOP (projections
  // 4 x 2 x 1024^3 = 8.6, attention core <= 4.3, experts 1024 tokens x 2 x 3 x 2 x 1024 x 256
  // = 3.2) plus its router and vector kernels, under 0.2 ms; the head's forward alone is
  // 2 x 1024 x 1024 x 32000 = 67.1 GFLOP = 0.67 ms > 0.6 ms, and every backward is longer than
  // its forward. Dropless exposes each layer's forward excess (more than 0.1 ms x 2 layers x 4
  // micro-batches); drop-and-pad exposes nothing.
  const TimeBreakdown off = step(0, dropless);
  EXPECT_NEAR(step(37.5e-6, pad).launch, off.launch, 1e-12);
  EXPECT_GT(step(37.5e-6, dropless).launch - off.launch, 4 * 2 * (0.3e-3 - 0.2e-3));
  // Drop without padding still waits for the counts (cuda_sync_point "before_permutation_1"):
  // the same as dropless.
  EXPECT_NEAR(step(37.5e-6, MoeTokenDrop::kDrop).launch, step(37.5e-6, dropless).launch, 1e-12);
  // The eager host work (cuda_graphs = "none") is added per layer when the dispatcher waits
  // (2 layers x 4 micro-batches x 0.2 ms = 1.6 ms); under drop-and-pad it joins the host time
  // that runs ahead and hides under the 0.67 ms head forward (0.1 ms a layer and direction).
  EXPECT_NEAR(step(0, dropless, 0.2e-3).launch - off.launch, 1.6e-3, 1e-9);
  EXPECT_NEAR(step(0, pad, 0.2e-3).launch, off.launch, 1e-12);
}

// (3) ZeRO-3/FSDP: prefetch hides the gathers behind compute; hybrid sharding groups.
TEST(Causes, Zero3PrefetchAndHybridShardingGroups) {
  // 3 s of gathers and reduce-scatter against 2 s of compute, 1 s per gather, 10 layers:
  // prefetch exposes the 1 s excess and the first layer's two gathers (2 x 1/10).
  EXPECT_NEAR(exposed_zero3(3, 2, 1, 10, true), 1.2, 1e-12);
  EXPECT_NEAR(exposed_zero3(1, 2, 1, 10, true), 0.2, 1e-12);
  EXPECT_NEAR(exposed_zero3(3, 2, 1, 10, false), 3.0, 1e-12);  // no prefetch: every gather waits
  // 16 devices on two nodes, ZeRO-3 over all 16 vs HSDP shard groups of 8 (one node): weights
  // per device are 2 B x params / 16 vs / 8.
  model::ModelConfig m = tiny_gpt();
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.zero = 3;
  plan::Run r = make_run(1024, 16);
  Prediction full = predict(m, c, r, s);
  s.shard_group = 8;
  Prediction hsdp = predict(m, c, r, s);
  EXPECT_NEAR(hsdp.memory.weights / full.memory.weights, 2.0, 1e-9);
  // The per-micro-batch gathers stay on NVLink (100 GB/s) instead of crossing the nodes, where
  // the 8 rings of a whole-node group share the 8 NICs: at 1 GB/s a NIC, 8 GB/s (ring_bw in
  // collectives.cc). HSDP pays one all-reduce of its shards across the 2 replicas per step.
  c.links[1].bw_unidir = 1e9;
  s.zero3_prefetch = false;
  Prediction hsdp_no_prefetch = predict(m, c, r, s);
  s.shard_group = 0;
  Prediction full_no_prefetch = predict(m, c, r, s);
  EXPECT_LT(hsdp_no_prefetch.time.dp_comm, full_no_prefetch.time.dp_comm / 1.5);
}

// (2) Tile and wave quantization (NVIDIA's "Matrix Multiplication Background" guide, section 3):
// BigScience's hidden 14400 vs 13824 on A100's 108 SMs, TP 8, micro-batch 1 x 2048 tokens.
TEST(Causes, TileAndWaveQuantizationOfA14400WideGemmOn108Sms) {
  const std::vector<std::array<long, 2>> tiles = {{256, 128}, {128, 256}, {128, 128}};
  // The attention projection's output, 2048 x 14400. 256x128 tiles: 8 x ceil(112.5) = 904
  // tiles, 9 waves of 108: 2048 x 14400 / (9 x 108 x 256 x 128) = 29,491,200 / 31,850,496.
  EXPECT_NEAR(wave_efficiency(2048, 14400, 256, 128, 108), 29491200.0 / 31850496, 1e-12);
  // 128x128: 16 x 113 = 1808 tiles, 17 waves: 29,491,200 / 30,081,024 = 0.980, the best of the set.
  EXPECT_NEAR(best_tile_efficiency(2048, 14400, tiles, 108), 29491200.0 / 30081024, 1e-12);
  // 13824 = 108 x 128: 16 x 108 = 1728 tiles of 128x128 are exactly 16 waves.
  EXPECT_DOUBLE_EQ(best_tile_efficiency(2048, 13824, tiles, 108), 1.0);
  // The whole GEMM (k 1800 = 14400 / 8): forward 2048 x 14400 (above); input gradient
  // 2048 x 1800: 16 x 15 = 240 tiles of 128x128 in 3 waves, 3,686,400 / 5,308,416 = 0.694 (the
  // larger tiles need 2 waves of 216 slots: 0.521); weight gradient 1800 x 14400: 15 x 57 = 855
  // tiles of 128x256 in 8 waves, 25,920,000 / 28,311,552 = 0.916. Harmonic mean over the three
  // equal-FLOP GEMMs, over the 8192-square reference (4096 tiles of 128x128 in 38 waves:
  // 67,108,864 / 67,239,936): 0.846.
  double a = 29491200.0 / 30081024, b = 3686400.0 / 5308416, c = 25920000.0 / 28311552;
  double ref = 67108864.0 / 67239936;
  double expected = 3 / (1 / a + 1 / b + 1 / c) / ref;
  EXPECT_NEAR(tile_wave_factor(2048, 14400, 1800, tiles, 108), expected, 1e-12);
  EXPECT_NEAR(expected, 0.846, 0.001);
  // Without a tile set (clusters that state none) the factor is off.
  EXPECT_DOUBLE_EQ(tile_wave_factor(2048, 14400, 1800, {}, 108), 1.0);
  // A grouped GEMM of 8 experts x 100 rows x 256 columns: 8 x 1 x 2 = 16 tiles of 128x128
  // fill one wave, 8 x 100 x 256 / (108 x 16384).
  EXPECT_NEAR(best_tile_efficiency(100, 256, tiles, 108, 8), 204800.0 / 1769472, 1e-12);
  // The A100 cluster files state the set (sources there).
  EXPECT_EQ(shipped_cluster("dgx-a100").eff.gemm_tiles, tiles);
  EXPECT_EQ(shipped_cluster("jean-zay-a100").eff.gemm_tiles, tiles);
}

// (2b) Outputs narrower than the smallest tile of the set are not charged tile and wave
// quantization (gemm_efficiency.h, output_tile_efficiency): the library runs a narrow tile or
// splits k there, and the small-dimension curve alone charges the narrow side. The MoE router
// of 8 experts over 8192 rows and hidden 2048 on A100 (108 SMs).
TEST(Causes, TileAndWaveQuantizationSparesOutputsNarrowerThanTheSmallestTile) {
  const std::vector<std::array<long, 2>> tiles = {{256, 128}, {128, 256}, {128, 128}};
  EXPECT_DOUBLE_EQ(smallest_tile_side(tiles), 128.0);
  // Charged as if tiled, the router's 8192 x 8 output would fill 64 tiles of 128x128 (4 / 108
  // of one wave) and its 2048 x 8 weight gradient 16 (1 / 108): with the input gradient below,
  // 3 / (27 + 1.0547 + 108) / 0.99805 = 0.022, on top of the small-dimension curve's ~0.1.
  // Not charged: the forward and weight-gradient outputs count 1.
  EXPECT_DOUBLE_EQ(output_tile_efficiency(8192, 8, tiles, 108, 1), 1.0);
  EXPECT_DOUBLE_EQ(output_tile_efficiency(2048, 8, tiles, 108, 1), 1.0);
  // The input gradient 8192 x 2048 is wide and keeps its wave loss: 64 x 16 = 1024 tiles of
  // 128x128 (or 512 of either larger tile), 10 waves of 108 (5 of 108): 1024 / 1080.
  EXPECT_NEAR(output_tile_efficiency(8192, 2048, tiles, 108, 1), 1024.0 / 1080, 1e-12);
  // The whole router: 3 / (1 + 1080 / 1024 + 1) over the 8192-square reference = 0.984.
  double ref = 67108864.0 / 67239936;
  double router = 3 / (1 + 1080.0 / 1024 + 1) / ref;
  EXPECT_NEAR(tile_wave_factor(8192, 8, 2048, tiles, 108), router, 1e-12);
  EXPECT_NEAR(router, 0.984, 0.001);
  // The boundary: an output exactly one tile side wide is tiled (8192 x 128: 64 tiles of
  // 128x128 in one wave, 64 / 108), one column narrower is not.
  EXPECT_NEAR(output_tile_efficiency(8192, 128, tiles, 108, 1), 64.0 / 108, 1e-12);
  EXPECT_DOUBLE_EQ(output_tile_efficiency(8192, 127, tiles, 108, 1), 1.0);
  // A grouped GEMM whose experts receive fewer rows than a tile side is not charged either.
  EXPECT_DOUBLE_EQ(output_tile_efficiency(100, 256, tiles, 108, 8), 1.0);
  // Wide GEMMs are unchanged: the 14400-wide projection of the test above keeps 0.846.
  EXPECT_NEAR(tile_wave_factor(2048, 14400, 1800, tiles, 108), 0.846, 0.001);
}

// (3) ZeRO-1/2 at scale: DeepSpeed gathers the updated weights inside the optimizer step and
// InternEvo broadcasts them after it (stack param_gather_overlap = false, sources in
// configs/plan/stack/deepspeed.toml), so that gather is exposed even though the gradient
// reduction overlaps the backward.
TEST(Causes, ShardedOptimizerWeightGatherIsExposedWhenTheStackRunsItInTheStep) {
  // tiny_gpt(2): embedding and untied head 2 x 32000 x 1024 = 65,536,000; each layer
  // 3 x 1024^2 (QKV) + 1024^2 + 2 x 1024 x 4096 + 2 x 1024 (norms) = 12,584,960: 90,705,920
  // parameters. ZeRO-1 over DP 16 on two nodes: the ring's 8 members per node use 8 NICs,
  // min(8 x 10, 100) = 80 GB/s; the bf16 all-gather moves 15/16 x 2 x 90,705,920 B / 80 GB/s
  // = 2.12592 ms. Micro-batch 4 x 1024 tokens: the forward (about 2 x 90.7M x 4096 FLOP at
  // 100 TFLOPS = 7.4 ms) hides it when the gather overlaps, and the fp32 reduce-scatter
  // (4.25 ms) hides behind the longer backward either way.
  model::ModelConfig m = tiny_gpt();
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.zero = 1;
  plan::Run r = make_run(1024, 64, 4);
  Prediction hidden = predict(m, c, r, s);
  EXPECT_NEAR(hidden.time.dp_comm, 0, 1e-12);
  s.param_gather_overlap = false;
  Prediction exposed = predict(m, c, r, s);
  EXPECT_NEAR(exposed.time.dp_comm, 15.0 / 16 * 2 * 90705920 / 80e9, 1e-9);
  EXPECT_NEAR(exposed.time.step - hidden.time.step, exposed.time.dp_comm * (1 + s.stack.step_overhead), 1e-9);
  // The stacks: DeepSpeed (and InternEvo's runs on it) gather in the step; Megatron-Core's
  // distributed optimizer keeps the default.
  EXPECT_FALSE(load_stack(source_path("configs/plan/stack/deepspeed.toml")).param_gather_overlap);
  EXPECT_TRUE(load_stack(source_path("configs/plan/stack/megatron-core.toml")).param_gather_overlap);
  EXPECT_FALSE(strategy_on_stack(load_stack(source_path("configs/plan/stack/deepspeed.toml"))).param_gather_overlap);
}

// Overlap as a property of the schedule: interleaved 1F1B with pp_overlap (Megatron-Core's
// overlap_p2p_comm) hides the steady state's P2P under the paired chunks' compute; the
// warm-up and cool-down sends stay exposed.
TEST(Causes, InterleavedPipelineHidesSteadyStateSendsUnderPairedChunks) {
  // m = 16 micro-batches, pp 4, vpp 2, rank 0: warm-up (4 - 0 - 1) x 2 + (2 - 1) x 4 = 10 of
  // 32 chunks; rank 3: 4 of 32. No interleaving: nothing to pair (share 1).
  EXPECT_DOUBLE_EQ(interleaved_warmup_share(16, 4, 2, 0), 10.0 / 32);
  EXPECT_DOUBLE_EQ(interleaved_warmup_share(16, 4, 2, 3), 4.0 / 32);
  EXPECT_DOUBLE_EQ(interleaved_warmup_share(2, 4, 2, 0), 1.0);
  EXPECT_DOUBLE_EQ(interleaved_warmup_share(16, 4, 1, 0), 1.0);
  // 1 ms per send, 2 chunks: 4 ms of P2P per micro-batch without overlap.
  EXPECT_NEAR(exposed_pp(1e-3, 2, 5e-3, 10e-3, 0.25, false), 4e-3, 1e-15);
  // Chunks of 5 ms forward and 10 ms backward hide every paired send: only the unpaired
  // quarter is exposed, 0.25 x 4 ms = 1 ms.
  EXPECT_NEAR(exposed_pp(1e-3, 2, 5e-3, 10e-3, 0.25, true), 1e-3, 1e-15);
  // Sends of 8 ms under the same chunks: paired, each chunk exposes (8 - 10 -> 0) + (8 - 5) = 3 ms,
  // 2 chunks 6 ms; 0.25 x 32 ms + 0.75 x 6 ms = 12.5 ms.
  EXPECT_NEAR(exposed_pp(8e-3, 2, 5e-3, 10e-3, 0.25, true), 12.5e-3, 1e-15);
  // Without interleaving the overlap does not apply (Megatron-Core turns it off for vpp = 1).
  EXPECT_NEAR(exposed_pp(1e-3, 1, 5e-3, 10e-3, 0.25, true), 2e-3, 1e-15);
  // Whole prediction: 4 layers on pp 2 x vpp 2 (one layer a chunk) over the two-node test
  // cluster (stages 8 ranks apart, so every send crosses the 10 GB/s scale-out level), 8
  // micro-batches. A layer's forward (25.8 GFLOP of GEMMs on 1024 tokens at 100 TFLOPS, 0.26 ms)
  // outlasts a 2 MB send (0.21 ms), so every paired send hides; the slowest rank is the last
  // (it holds the 32000-word head), whose warm-up is (2 - 1 - 1) x 2 + (2 - 1) x 2 = 2 of 16
  // chunks: the exposed PP time is 2/16 of the time without overlap.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.pp = 2;
  s.vpp = 2;
  plan::Run r = make_run(1024, 64);
  Prediction plain = predict(m, c, r, s);
  s.pp_overlap = true;
  Prediction hidden = predict(m, c, r, s);
  ASSERT_GT(plain.time.pp_comm, 0);
  EXPECT_NEAR(hidden.time.pp_comm / plain.time.pp_comm, 2.0 / 16, 1e-9);
  // Without interleaving the flag changes nothing.
  s.vpp = 1;
  Prediction one = predict(m, c, r, s);
  s.pp_overlap = false;
  EXPECT_DOUBLE_EQ(predict(m, c, r, s).time.pp_comm, one.time.pp_comm);
}

// (5) Megatron-LM's scatter/gather of pipeline sends (arXiv 2104.04473 section 4.1): without
// sequence parallelism the activation is replicated over TP; each of the t ranks sends 1/t of it
// across the stage boundary and the next stage all-gathers it over NVLink.
TEST(Causes, ScatterGatherSplitsPipelineSendsOverTheTensorParallelRanks) {
  // tiny GPT (d 1024), 1024 tokens a micro-batch: 2 MiB a send. TP 8 x PP 2 on two nodes: the
  // stages are a node apart. Plain: 2097152 / 10e9 = 209.7152 us. Scattered: 2097152 / 8 / 10e9
  // = 26.2144 us over IB + 7/8 x 2097152 / 100e9 = 18.35008 us gathered over NVLink.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.tp = 8;
  s.pp = 2;
  s.sequence_parallel = false;
  plan::Run r = make_run(1024, 64);
  Prediction plain = predict(m, c, r, s);
  s.stack.pp_scatter_gather = true;
  Prediction scattered = predict(m, c, r, s);
  ASSERT_GT(plain.time.pp_comm, 0);
  EXPECT_NEAR(scattered.time.pp_comm / plain.time.pp_comm, (26.2144 + 18.35008) / 209.7152, 1e-9);
  // With sequence parallelism the send is already 1/t per rank: the flag changes nothing.
  s.sequence_parallel = true;
  Prediction sp = predict(m, c, r, s);
  s.stack.pp_scatter_gather = false;
  EXPECT_DOUBLE_EQ(predict(m, c, r, s).time.pp_comm, sp.time.pp_comm);
  // The Megatron-LM profiles turn it on (on by default in its arguments); Megatron-Core's does not.
  EXPECT_TRUE(load_stack(source_path("configs/plan/stack/megatron-lm.toml")).pp_scatter_gather);
  EXPECT_TRUE(load_stack(source_path("configs/plan/stack/megatron-lm-2023.toml")).pp_scatter_gather);
  EXPECT_FALSE(load_stack(source_path("configs/plan/stack/megatron-core.toml")).pp_scatter_gather);
}

// (7) A stack older than sequence parallelism (arXiv 2205.05198) sets the default a strategy
// that does not state it takes: Megatron-DeepSpeed (MT-NLG, BLOOM, BigScience's 2022 benchmarks)
// runs without it, and its pipeline engine partitions each send over the TP ranks
// (microsoft/DeepSpeed deepspeed/runtime/pipe/engine.py, is_pipe_partitioned).
TEST(Causes, AStackOlderThanSequenceParallelismRunsWithoutItUnlessTheStrategyStatesIt) {
  StackProfile mds = load_stack(source_path("configs/plan/stack/megatron-deepspeed.toml"));
  EXPECT_FALSE(mds.sequence_parallel);
  EXPECT_TRUE(mds.pp_scatter_gather);
  EXPECT_TRUE(load_stack(source_path("configs/plan/stack/megatron-core.toml")).sequence_parallel);
  EXPECT_FALSE(read_strategy(toml::table{}, "empty.toml", mds).sequence_parallel);
  EXPECT_FALSE(strategy_on_stack(mds).sequence_parallel);
  toml::table stated{{"sequence_parallel", true}};
  EXPECT_TRUE(read_strategy(stated, "stated.toml", mds).sequence_parallel);
  EXPECT_TRUE(read_strategy(toml::table{}, "empty.toml", StackProfile{}).sequence_parallel);

  // The same tiny GPT as the scatter/gather case (d 1024, 1024 tokens: a 2 MiB activation), TP 8
  // x PP 2 on two nodes. With sequence parallelism each rank sends its 1/8: 2097152 / 8 / 10e9 =
  // 26.2144 us. On this stack (no sequence parallelism, partitioned sends) it sends the same
  // 26.2144 us and the next stage all-gathers the whole activation over NVLink: 7/8 x 2097152 /
  // 100e9 = 18.35008 us more.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(2);
  plan::Run r = make_run(1024, 64);
  Strategy on = read_strategy(toml::table{{"tp", 8}, {"pp", 2}}, "s.toml", mds);
  Strategy sp = on;
  sp.sequence_parallel = true;
  Prediction without = predict(m, c, r, on), with = predict(m, c, r, sp);
  ASSERT_GT(with.time.pp_comm, 0);
  EXPECT_NEAR(without.time.pp_comm / with.time.pp_comm, (26.2144 + 18.35008) / 26.2144, 1e-9);
  // Norms, dropout and residuals replicated on every TP rank: more vector time, more activations.
  EXPECT_GT(without.time.step, with.time.step);
  EXPECT_GT(without.memory.activations, with.memory.activations);
}

// (7b) Megatron-LM as of 2021 (arXiv 2104.04473) predates sequence parallelism too (arXiv
// 2205.05198, May 2022): its profile runs a strategy that does not state it without it, so
// norms, residual adds and the embedding's output run on the whole sequence on every TP rank.
TEST(Causes, TheMegatronLm2021StackRunsWithoutSequenceParallelismUnlessStated) {
  StackProfile mlm = load_stack(source_path("configs/plan/stack/megatron-lm.toml"));
  EXPECT_FALSE(mlm.sequence_parallel);
  EXPECT_FALSE(read_strategy(toml::table{}, "empty.toml", mlm).sequence_parallel);
  toml::table stated{{"sequence_parallel", true}};
  EXPECT_TRUE(read_strategy(stated, "stated.toml", mlm).sequence_parallel);
  // Megatron-LM's 2023 commit (285068c8, MegaScale's baseline) has it: the default stays on.
  EXPECT_TRUE(load_stack(source_path("configs/plan/stack/megatron-lm-2023.toml")).sequence_parallel);

  // tiny_gpt(4) (d 1024), 1024 tokens a micro-batch, TP 8 on one node, 2 micro-batches. The
  // TP traffic is the same volume either way: one all-reduce of 1024 x 1024 x 2 B = 2 MiB per
  // block (2 x 7/8 x 2097152 / 100e9 = 36.70016 us), or an all-gather and a reduce-scatter of it
  // (7/8 x 2097152 / 100e9 twice): 8.5 per forward (8 blocks, the head's gather half), 17 per
  // micro-batch. What differs is the vector work on the sequence: per token, each block's
  // bias-dropout-add into the residual (timed as the add: two reads and a write, 6d B) and norm (4d B), the head's norm (4d B) and the embedding's output (4d
  // B) = 8 x 10d + 8d = 88d B, on all 1024 tokens instead of 1024 / 8: 7/8 x 1024 x 88 x 1024 B
  // = 80740352 B, 40.370176 us at 2 TB/s forward, x3 with the backward: 121.110528 us a
  // micro-batch, 242.221056 us for the 2.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(1);
  plan::Run r = make_run(1024, 2);
  Strategy off = read_strategy(toml::table{{"tp", 8}}, "s.toml", mlm);
  Strategy on = off;
  on.sequence_parallel = true;
  Prediction without = predict(m, c, r, off), with = predict(m, c, r, on);
  EXPECT_NEAR(without.time.compute - with.time.compute, 242.221056e-6, 1e-12);
  EXPECT_NEAR(without.time.tp_comm, 2 * 17 * 36.70016e-6, 1e-12);
  EXPECT_NEAR(with.time.tp_comm, 2 * 17 * 36.70016e-6, 1e-12);
}

// (7c) A ZeRO-1 run that all-reduces its gradients in full before the sharded step
// (`grad_allreduce`) moves twice what a reduce-scatter of the same element size moves; the weight
// all-gather after the step is the same. DeepSpeed's pipeline engine under bf16 does this
// (`_bf16_reduce_grads` -> buffered_allreduce_fallback, microsoft/DeepSpeed 56c522386
// deepspeed/runtime/pipe/engine.py), but allreduce_bucket first casts the fp32 gradients to
// communication_data_type, bf16 there (engine.py): at 2 B an element the all-reduce costs what
// the fp32 reduce-scatter did. Its BF16_Optimizer keeps the bf16 .grad and a full fp32 gradient
// buffer (bf16_optimizer.py fp32_groups_gradients_flat): grad_bytes 6.
TEST(Causes, AGradientAllReduceBeforeAShardedStepMovesTwiceAReduceScatterOfTheSameBytes) {
  // tiny_gpt(4) at TP 8 on each of 2 nodes, DP 2 across them (one member a node: 10 GB/s), ZeRO-1,
  // no overlap. Parameters one device holds: each layer's norms 2 x 1024 replicated plus the rest
  // of its 12,584,960 split 8 ways: 2048 + 1,572,864 = 1,574,912, x4 = 6,299,648; embedding and
  // untied head 2 x 32000 x 1024 / 8 = 8,192,000: 14,491,648. Over DP 2 ((g-1)/g = 1/2):
  //   weight all-gather, 2 B:            1/2 x 14,491,648 x 2 / 10e9 = 1.4491648 ms
  //   reduce-scatter, 4 B (fp32):        2.8983296 ms   -> with the gather 4.3474944 ms
  //   all-reduce, 4 B: 2 x 2.8983296 =   5.7966592 ms   -> with the gather 7.2458240 ms
  //   all-reduce, 2 B (DeepSpeed's bf16 cast): 2 x 1.4491648 = 2.8983296 ms -> 4.3474944 ms
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.tp = 8;
  s.zero = 1;
  s.dp_overlap = false;
  plan::Run r = make_run(1024, 2);
  Prediction rs = predict(m, c, r, s);
  s.grad_allreduce = true;
  Prediction ar = predict(m, c, r, s);
  EXPECT_NEAR(rs.time.dp_comm, 4.3474944e-3, 1e-12);
  EXPECT_NEAR(ar.time.dp_comm, 7.2458240e-3, 1e-12);
  // The mechanism itself changes only the traffic: compute and memory stay.
  EXPECT_DOUBLE_EQ(ar.time.compute, rs.time.compute);
  EXPECT_DOUBLE_EQ(ar.memory.total(), rs.memory.total());
  // DeepSpeed's bf16 engine as a validation file states it (grad_bytes 6, grad_reduce_bytes 2):
  // the all-reduce at 2 B equals the fp32 reduce-scatter; the gradients take 2 B a parameter
  // more than fp32 main gradients alone, 2 x 14,491,648 = 28,983,296 B.
  plan::Run bf16 = read_run(toml::table{{"seq_len", 1024}, {"global_batch", 2}, {"grad_bytes", 6},
                                        {"grad_reduce_bytes", 2}, {"tied_grad_reduce_bytes", 4}},
                            "bf16.toml");
  Prediction ds = predict(m, c, bf16, s);
  EXPECT_NEAR(ds.time.dp_comm, 4.3474944e-3, 1e-12);
  EXPECT_NEAR(ds.memory.gradients - ar.memory.gradients, 28983296.0, 1e-3);
}

// (3b) ZeRO-2 keeps only its shard of the gradients through the step, so each micro-batch's
// backward reduce-scatters what it produced (DeepSpeed: "gradient reduction is required after
// every backward because of gradient partitioning", deepspeedai/DeepSpeed issue 2252); ZeRO-1
// accumulates whole gradients and reduce-scatters once after the last micro-batch.
TEST(Causes, ZeroTwoReduceScattersEveryMicroBatchWhereZeroOneReducesOnce) {
  // The case above (tiny_gpt(4), TP 8 on each of 2 nodes, DP 2 across them, no overlap) with a
  // global batch of 8: 4 micro-batches of 1 per DP rank. Per reduction (fp32, 4 B):
  //   1/2 x 14,491,648 x 4 / 10e9 = 2.8983296 ms; the bf16 weight gather 1.4491648 ms, once.
  //   ZeRO-1: 2.8983296 + 1.4491648           = 4.3474944 ms
  //   ZeRO-2: 4 x 2.8983296 + 1.4491648       = 13.0424832 ms
  // Gradient memory: 14,491,648 x 4 = 57,966,592 B whole, half of it sharded over DP 2.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.tp = 8;
  s.zero = 1;
  s.dp_overlap = false;
  plan::Run r = make_run(1024, 8);
  Prediction z1 = predict(m, c, r, s);
  s.zero = 2;
  Prediction z2 = predict(m, c, r, s);
  EXPECT_EQ(z1.micro_batches, 4);
  EXPECT_NEAR(z1.time.dp_comm, 4.3474944e-3, 1e-12);
  EXPECT_NEAR(z2.time.dp_comm, 13.0424832e-3, 1e-12);
  EXPECT_NEAR(z1.memory.gradients, 57966592.0, 1e-3);
  EXPECT_NEAR(z2.memory.gradients, 57966592.0 / 2, 1e-3);
  EXPECT_DOUBLE_EQ(z2.time.compute, z1.time.compute);
  // One micro-batch: one reduction either way.
  plan::Run one = make_run(1024, 2);
  Strategy s1 = s;
  s1.zero = 1;
  EXPECT_NEAR(predict(m, c, one, s).time.dp_comm, predict(m, c, one, s1).time.dp_comm, 1e-15);
  // With dp_overlap each reduction hides behind its own micro-batch's backward, so ZeRO-2
  // exposes m times what ZeRO-1 exposes behind the last one (the gather stays exposed
  // without param_gather_overlap).
  s.dp_overlap = true;
  s.param_gather_overlap = false;
  s1 = s;
  s1.zero = 1;
  const double gather = 1.4491648e-3;
  Prediction o1 = predict(m, c, r, s1), o2 = predict(m, c, r, s);
  EXPECT_NEAR(o2.time.dp_comm - gather, 4 * (o1.time.dp_comm - gather), 1e-12);
}

// (7e) Without FlashAttention, Megatron's scale-mask-softmax runs as one fused CUDA kernel or, when
// FusedScaleMaskSoftmax.is_kernel_available says no, as PyTorch's fp32 path: cast, scale,
// masked_fill, softmax, cast back, each a pass over the s x s scores (megatron/model/
// fused_softmax.py forward_torch_softmax). 32 more bytes a score forward, 34 backward.
TEST(Causes, AnUnfusedSoftmaxAddsFp32PassesOverTheScores) {
  // tiny_gpt(4) at TP 8 on one node (1 head a rank), 1024 tokens a micro-batch, 2 micro-batches,
  // no recomputation: 1024 x 1 x 1024 = 1,048,576 scores a layer. Forward 4 x 1,048,576 x 32 B
  // = 134,217,728 B / 2 TB/s = 67.108864 us, backward 4 x 1,048,576 x 34 B = 142,606,336 B =
  // 71.303168 us: 138.412032 us a micro-batch, 276.824064 us for the two.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(1);
  plan::Run r = make_run(1024, 2);
  Strategy fused;
  fused.tp = 8;
  fused.flash_attention = false;
  Strategy unfused = fused;
  unfused.fused_softmax = false;
  Prediction a = predict(m, c, r, fused), b = predict(m, c, r, unfused);
  EXPECT_NEAR(b.time.compute - a.time.compute, 276.824064e-6, 1e-12);
  // Full recomputation runs the forward twice: 2 x 67.108864 + 71.303168 = 205.520896 us each.
  fused.recompute = unfused.recompute = Recompute::kFull;
  EXPECT_NEAR(predict(m, c, r, unfused).time.compute - predict(m, c, r, fused).time.compute, 2 * 205.520896e-6, 1e-12);
}

// (3b) ZeRO-1 weights returned by one broadcast per owning rank (InternEvo's broadcast_params,
// fa7337b hybrid_zero_optim.py) rather than one all-gather: each broadcast pays the collective's
// launch and the ring's g - 1 hops of latency.
TEST(Causes, WeightBroadcastsPerShardOwnerPayTheRingLatencyEach) {
  // The gather case above (tiny_gpt(2), 90,705,920 parameters, ZeRO-1 over DP 16 on two nodes,
  // 80 GB/s, exposed) with a 10 us launch and 5 us a hop between nodes. One bf16 all-gather:
  // 10 + 15 x 5 = 85 us + 15/16 x 181,411,840 B / 80 GB/s = 2.12592 ms: 2.21092 ms. Four
  // broadcasts: 4 x 85 us + 181,411,840 B / 80 GB/s (each byte over each link once) = 0.34 +
  // 2.267648 = 2.607648 ms: 0.396728 ms more. 1000 broadcasts stated: at most one per rank, 16:
  // 16 x 85 us + 2.267648 ms = 3.627648 ms, 1.416728 ms more.
  model::ModelConfig m = tiny_gpt();
  Cluster c = tiny_cluster(2);
  c.eff.comm_launch_s = 10e-6;
  c.links[1].latency_s = 5e-6;
  Strategy s;
  s.zero = 1;
  s.param_gather_overlap = false;
  plan::Run r = make_run(1024, 64, 4);
  double gather = predict(m, c, r, s).time.dp_comm;
  s.param_broadcasts = 4;
  EXPECT_NEAR(predict(m, c, r, s).time.dp_comm - gather, 0.396728e-3, 1e-12);
  s.param_broadcasts = 1000;
  EXPECT_NEAR(predict(m, c, r, s).time.dp_comm - gather, 1.416728e-3, 1e-12);
}

// (2d) Misaligned 16-bit GEMMs (stack.h, tensor_core_align_bytes): on a stack that sets it (the
// 2022 Megatron-DeepSpeed profile: an effective rate observed on BigScience's runs, not a cuBLAS
// rule), a 16-bit GEMM whose k or n is not a multiple of 16 bytes is charged at the device's
// non-tensor FP32 peak x matmul. BigScience's hidden 14400 with head dimension 150 or 450 missed
// it in every batched product of the unfused attention.
model::ModelConfig align_model(int head_dim, long vocab, int ffn = 4096) {
  return model::parse_model_config(
      "[model]\nname = \"tiny-align\"\nvocab = " + std::to_string(vocab) +
          "\nhidden = 1024\nlayers = 4\ntrain_seq_len = 1024\n[attention]\nkind = \"gqa\"\nheads = 8\n"
          "kv_heads = 8\nhead_dim = " + std::to_string(head_dim) + "\nrope_dims = " + std::to_string(head_dim) +
          "\n[ffn]\nactivation = \"gelu\"\nhidden = " + std::to_string(ffn) + "\n",
      "tiny-align.toml");
}

// The tiny cluster with a 10 TFLOPS FP32 peak, and a strategy with and without the rate.
struct AlignSetup {
  Cluster c = tiny_cluster(1);
  plan::Run r = make_run(1024, 16);
  Strategy off, on;
  AlignSetup() {
    c.device.peak.flops_fp32.value = 10e12;
    off.flash_attention = false;
    on = off;
    on.stack.tensor_core_align_bytes = 16;
  }
};

TEST(Causes, A16BitGemmOffTheTensorCoreAlignmentRunsAtTheFp32Rate) {
  // 8 heads of 126 at TP 1 (2 x 126 = 252 B, not a multiple of 16; every other dimension is:
  // 8 x 126 = 1008, QKV 3024, FFN 4096, vocabulary 32000), unfused attention, DP 8 over one
  // node, 1024 tokens a micro-batch, 2 micro-batches a device, 4 layers, no recomputation. The batched products QK^T and PV
  // do 2 x 8 x (126 + 126) x 1024 keys x 1024 queries = 4,227,858,432 FLOPs a layer forward:
  // 42.27858432 us at the tiny cluster's 100 TFLOPS, 422.7858432 us at an FP32 rate of 10
  // TFLOPS: +380.50725888 us forward, twice that backward, x 4 layers x 2 micro-batches =
  // 9.13217421312 ms.
  AlignSetup a;
  model::ModelConfig hd126 = align_model(126, 32000);
  EXPECT_NEAR(predict(hd126, a.c, a.r, a.on).time.compute - predict(hd126, a.c, a.r, a.off).time.compute, 9.13217421312e-3, 1e-12);
  // A head dimension of 128 (256 B) meets it, and FlashAttention runs no cuBLAS batched GEMM.
  model::ModelConfig hd128 = align_model(128, 32000);
  EXPECT_EQ(predict(hd128, a.c, a.r, a.on).time.compute, predict(hd128, a.c, a.r, a.off).time.compute);
  a.on.flash_attention = a.off.flash_attention = true;
  EXPECT_EQ(predict(hd126, a.c, a.r, a.on).time.compute, predict(hd126, a.c, a.r, a.off).time.compute);
  // Any 16-bit GEMM: an FFN of width 4100 (8,200 B rows) puts both FFN GEMMs at the FP32 rate.
  // Each does 2 x 1024 x 1024 x 4100 = 8,598,323,200 FLOPs: 85.983232 us at 100 TFLOPS, 859.83232
  // us at 10 (both above its 18,890,752 B / 2 TB/s = 9.445376 us): +1547.698176 us forward for the
  // two, x 3 with the backward, x 4 layers x 2 micro-batches = 37.144756224 ms.
  model::ModelConfig f4100 = align_model(128, 32000, 4100);
  EXPECT_NEAR(predict(f4100, a.c, a.r, a.on).time.compute - predict(f4100, a.c, a.r, a.off).time.compute, 37.144756224e-3, 1e-12);
  // The output layer on a stack that does not pad the vocabulary (a padding stack: below): 32001
  // (64,002 B rows) puts it at the FP32 rate.
  // 2 x 1024 x 1024 x 32001 = 67,110,961,152 FLOPs: 671.10961152 us at 100 TFLOPS, 6711.0961152
  // us at 10 (both above its 133,173,248 B / 2 TB/s = 66.586624 us): +6039.98650368 us forward,
  // x 3 with the backward, x 2 micro-batches = 36.23991902208 ms.
  model::ModelConfig v32001 = align_model(128, 32001);
  EXPECT_NEAR(predict(v32001, a.c, a.r, a.on).time.compute - predict(v32001, a.c, a.r, a.off).time.compute, 36.23991902208e-3, 1e-12);
  // Off by default: no shipped stack but the 2022 Megatron-DeepSpeed profile sets it.
  EXPECT_EQ(StackProfile{}.tensor_core_align_bytes, 0);
  EXPECT_EQ(load_stack(source_path("configs/plan/stack/megatron-deepspeed.toml")).tensor_core_align_bytes, 16);
  for (const char* name : {"megatron-lm", "megatron-lm-2023", "megatron-core", "nemo-24.07", "deepspeed", "torchtitan",
                           "llm-foundry", "llm-foundry-h100-2023", "megascale", "meta-llama3", "hai-llm", "mindspeed"})
    EXPECT_EQ(load_stack(source_path(std::string("configs/plan/stack/") + name + ".toml")).tensor_core_align_bytes, 0) << name;
}

// Only one of the two batched products misaligned (MLA with a query-key head of 64 + 64 = 128
// and a value head of 126): only PV is charged. 2 x 8 heads x 126 x 1024 keys x 1024 queries =
// 2,113,929,216 FLOPs: 21.13929216 us at 100 TFLOPS, 211.3929216 us at 10, +190.25362944 us
// forward, x 3 with the backward, x 4 layers x 2 micro-batches = 4.56608710656 ms. The other
// GEMMs are aligned: QKV-down 1024 x (8 x 128 + 512 + 64) = 1600 columns, up-projection 512 x
// 8 x (64 + 126) = 1520, output 8 x 126 = 1008 (2016 B) x 1024.
TEST(Causes, OnlyTheMisalignedBatchedProductOfTheAttentionIsCharged) {
  AlignSetup a;
  model::ModelConfig m = model::parse_model_config(
      "[model]\nname = \"tiny-mla\"\nvocab = 32000\nhidden = 1024\nlayers = 4\ntrain_seq_len = 1024\n"
      "[attention]\nkind = \"mla\"\nheads = 8\nkv_lora_rank = 512\nqk_nope_head_dim = 64\nqk_rope_head_dim = 64\n"
      "v_head_dim = 126\n[ffn]\nactivation = \"gelu\"\nhidden = 4096\n",
      "tiny-mla.toml");
  EXPECT_NEAR(predict(m, a.c, a.r, a.on).time.compute - predict(m, a.c, a.r, a.off).time.compute, 4.56608710656e-3, 1e-12);
}

// FP8 runs are left out: their linear layers run on the FP8 path (libraries refuse or the
// frameworks pad unaligned FP8 shapes), so an FFN of width 4100 (8200 B, not a multiple of 16)
// costs the same with the rate on. The output layer stays in BF16 in an FP8 run and is charged.
TEST(Causes, FP8GemmsAreNotChargedTheMisalignedRate) {
  AlignSetup a;
  a.c.device.peak.flops_fp8 = core::Quantity{200e12, "test", {}};
  a.r.fp8_matmul = true;
  a.on.flash_attention = a.off.flash_attention = true;
  model::ModelConfig ffn4100 = align_model(128, 32000, 4100);
  EXPECT_EQ(predict(ffn4100, a.c, a.r, a.on).time.compute, predict(ffn4100, a.c, a.r, a.off).time.compute);
  model::ModelConfig v32001 = align_model(128, 32001);
  EXPECT_GT(predict(v32001, a.c, a.r, a.on).time.compute, predict(v32001, a.c, a.r, a.off).time.compute);
  // The same FFN in a BF16 run is charged.
  a.r.fp8_matmul = false;
  EXPECT_GT(predict(ffn4100, a.c, a.r, a.on).time.compute, predict(ffn4100, a.c, a.r, a.off).time.compute);
}

// Vocabulary padding (stack.h, vocab_divisible_by): Megatron-LM pads the vocabulary to a multiple
// of 128 x TP (_vocab_size_with_padding), so GPT-2's 50257 runs as 51200 at TP 8 (50 x 1024),
// 32001 as 32128 at TP 1 and as 32256 at TP 2 (126 x 256); a stack without padding keeps it.
TEST(Causes, AMegatronStackPadsTheVocabularyToAMultipleOf128TimesTp) {
  EXPECT_EQ(padded_vocab(50257, 128, 8), 51200);
  EXPECT_EQ(padded_vocab(50304, 128, 8), 51200);
  EXPECT_EQ(padded_vocab(51200, 128, 8), 51200);
  EXPECT_EQ(padded_vocab(32001, 128, 1), 32128);
  EXPECT_EQ(padded_vocab(32001, 128, 2), 32256);
  EXPECT_EQ(padded_vocab(32001, 0, 2), 32001);
  for (const char* name : {"megatron-lm", "megatron-lm-2023", "megatron-core", "megatron-deepspeed", "nemo-24.07", "mindspeed", "megascale"})
    EXPECT_EQ(load_stack(source_path(std::string("configs/plan/stack/") + name + ".toml")).vocab_divisible_by, 128) << name;
  EXPECT_EQ(load_stack(source_path("configs/plan/stack/torchtitan.toml")).vocab_divisible_by, 0);
  // A vocabulary TP does not divide (32001 at TP 2), on a stack with the misaligned rate: without
  // padding the output layer's 16000.5 columns are charged; padded, the step is that of a
  // 32256-entry model (every time term the same), while the MFU conventions still count the
  // model's 32001 entries (the padding is work, not model FLOPs).
  AlignSetup a;
  a.r = make_run(1024, 8);
  a.on.tp = a.off.tp = 2;
  a.on.flash_attention = a.off.flash_attention = true;
  model::ModelConfig v32001 = align_model(128, 32001), v32256 = align_model(128, 32256);
  EXPECT_GT(predict(v32001, a.c, a.r, a.on).time.compute, predict(v32001, a.c, a.r, a.off).time.compute);
  Strategy padded = a.on;
  padded.stack.vocab_divisible_by = 128;
  Prediction p = predict(v32001, a.c, a.r, padded), q = predict(v32256, a.c, a.r, padded);
  EXPECT_EQ(p.time.step, q.time.step);
  EXPECT_EQ(p.time.compute, q.time.compute);
  EXPECT_EQ(p.time.dp_comm, q.time.dp_comm);
  EXPECT_EQ(p.memory.total(), q.memory.total());
  EXPECT_EQ(p.time.compute, predict(v32256, a.c, a.r, a.off).time.compute);  // aligned: no charge
  EXPECT_LT(p.mfu_of(model::FlopConvention::kMegatron), q.mfu_of(model::FlopConvention::kMegatron));
  EXPECT_NEAR(p.mfu_of(model::FlopConvention::kMegatron) / q.mfu_of(model::FlopConvention::kMegatron),
              model::training_flops_per_token(v32001, 1024, model::FlopConvention::kMegatron, false) /
                  model::training_flops_per_token(v32256, 1024, model::FlopConvention::kMegatron, false),
              1e-12);
}

// The README's example (GPT-3's unpadded 50257 on a Megatron stack with the misaligned rate): the
// padded vocabulary (51200 at TP 8) meets the alignment, so the step is that of 50304 (review
// rplan3 HIGH 1: unpadded, the output layer on the last stage cost 30%).
TEST(Causes, GptThreesUnpaddedVocabularyCostsNothingOnAMegatronStack) {
  model::ModelConfig m = shipped_model("gpt3-175b");
  ASSERT_EQ(m.vocab, 50257);
  model::ModelConfig m50304 = m;
  m50304.vocab = 50304;
  Cluster c = shipped_cluster("dgx-a100");
  plan::Run r = load_run(source_path("configs/run/gpt3-175b-megatron.toml"));
  Strategy s = load_strategy(source_path("configs/strategy/gpt3-tp8-pp8.toml"), load_stack(source_path("configs/plan/stack/megatron-deepspeed.toml")));
  EXPECT_EQ(predict(m, c, r, s).time.step, predict(m50304, c, r, s).time.step);
  s.stack.vocab_divisible_by = 0;  // unpadded, the 50257 columns at TP 8 miss the alignment
  EXPECT_GT(predict(m, c, r, s).time.step, 1.2 * predict(m50304, c, r, s).time.step);
}

// (7d) Tied input and output embeddings under a pipeline: the first and the last stage each hold
// a copy, and after the backward the pair all-reduces its gradient (Megatron-LM's
// _allreduce_word_embedding_grads, megatron/core/distributed/finalize_model_grads.py; DeepSpeed's
// pipeline engine _exec_reduce_tied_grads), exposed before the optimizer step.
TEST(Causes, TiedEmbeddingsUnderAPipelineAllReduceTheirGradientBetweenTheEndStages) {
  // The tiny GPT with tied embeddings, TP 8 x PP 2 over two nodes, DP 1 (no other DP traffic).
  // The pair is a node apart: 32000 x 1024 / 8 = 4,096,000 parameters x 4 B (fp32 gradients) =
  // 16,384,000 B; a two-rank ring moves half each way twice, one send of the whole over the
  // 10 GB/s link: 1.6384 ms (no latency in the tiny cluster).
  model::ModelConfig tied = model::parse_model_config(
      "[model]\nname = \"tiny-tied\"\nvocab = 32000\nhidden = 1024\nlayers = 4\ntie_embeddings = true\n"
      "train_seq_len = 1024\n[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\nhead_dim = 128\n"
      "rope_dims = 128\n[ffn]\nactivation = \"gelu\"\nhidden = 4096\n",
      "tiny-tied.toml");
  Cluster c = tiny_cluster(2);
  Strategy s;
  s.tp = 8;
  s.pp = 2;
  s.zero = 0;
  plan::Run r = make_run(1024, 2);
  EXPECT_NEAR(predict(tied, c, r, s).time.dp_comm, 1.6384e-3, 1e-12);
  // The element size is tied_grad_reduce_bytes, by default the run's grad_reduce_bytes: at 2 B
  // (fp16 under DeepSpeed, which all-reduces weight.grad) half of it, 0.8192 ms; DeepSpeed's bf16
  // engine all-reduces the fp32 copy (weight._hp_grad) while its DP reduction sends bf16, so its
  // files state 4 beside grad_reduce_bytes 2: 1.6384 ms again.
  plan::Run half = read_run(toml::table{{"seq_len", 1024}, {"global_batch", 2}, {"grad_reduce_bytes", 2}}, "fp16.toml");
  EXPECT_NEAR(predict(tied, c, half, s).time.dp_comm, 0.8192e-3, 1e-12);
  plan::Run bf16 = read_run(toml::table{{"seq_len", 1024}, {"global_batch", 2}, {"grad_bytes", 6},
                                        {"grad_reduce_bytes", 2}, {"tied_grad_reduce_bytes", 4}},
                            "bf16.toml");
  EXPECT_NEAR(predict(tied, c, bf16, s).time.dp_comm, 1.6384e-3, 1e-12);
  // Untied (the head its own matrix) or without a pipeline (one copy): nothing to reduce.
  EXPECT_EQ(predict(tiny_gpt(4), c, r, s).time.dp_comm, 0);
  s.pp = 1;
  EXPECT_EQ(predict(tied, tiny_cluster(1), r, s).time.dp_comm, 0);
}

// (4) The memory model: activation and gradient precision, recomputation variants, chunked logits.
TEST(Causes, MemoryFollowsPrecisionRecomputationAndChunkedLogits) {
  // Per token and layer (d = 1024, H = 8, f = 4096, TP 1), what the backward keeps:
  //   norms and GELU input (cheap): 2d + 2d + 2f = 12288 B
  //   GEMM inputs: qkv 2d, out-proj 2d, fc1 2d, fc2 2f = 14336 B
  //   attention core: q, k, v 6d + log-sum-exp 4H = 6176 B; its output o (2d) is the out-proj's
  //   input, one tensor, counted there (session 19; before, 2d more)  -> 32800 B per layer
  //   head: final norm 2d (cheap) + logits GEMM input 2d (GEMM) = 4096 B
  // 1024 tokens, 2 layers, one micro-batch in flight: (2 x 32800 + 4096) x 1024 = 71,368,704 B.
  model::ModelConfig m = tiny_gpt();
  Cluster c = tiny_cluster(1);
  c.nodes = 1;
  c.devices_per_node = 1;
  c.links = {LinkLevel{"none", 1, 1e12, 0, 1, "test"}};
  Strategy s;
  plan::Run r = make_run(1024, 1);
  EXPECT_NEAR(predict(m, c, r, s).memory.activations, 71368704, 1);
  // FP8 storage of GEMM inputs halves 14336 per layer and the head's 2048, and the out-proj's
  // FP8 copy is no longer the kernel's BF16 o, which the core keeps again (+2d):
  // (2 x (32800 + 2048 - 7168) + 4096 - 1024) x 1024 = 59,834,368 B.
  plan::Run fp8 = r;
  fp8.act_bytes = 1;
  EXPECT_NEAR(predict(m, c, fp8, s).memory.activations, 59834368, 1);
  // Selective (attention core) recomputes the core from q, k, v, which stay as its checkpoint's
  // inputs (Megatron; Korthikanti section 5): only the log-sum-exp, 4H = 32 per layer, goes:
  // (2 x 32768 + 4096) x 1024 = 71,303,168 B (review rplan5 MEDIUM 4; until session 19 q, k, v
  // went too: 58,720,256 B).
  s.recompute = Recompute::kSelective;
  EXPECT_NEAR(predict(m, c, r, s).memory.activations, 71303168, 1);
  // norm-act drops the cheap 12288 per layer and the head norm's 2048: (2 x 20512 + 2048) x 1024.
  s.recompute = Recompute::kNormAct;
  EXPECT_NEAR(predict(m, c, r, s).memory.activations, 44105728, 1);
  // Full: each layer keeps its input (2d = 2048 B per token) plus one layer's working set:
  // 2 x 2048 x 1024 + 71,368,704 / 2 = 39,878,656 B.
  s.recompute = Recompute::kFull;
  EXPECT_NEAR(predict(m, c, r, s).memory.activations, 39878656, 1);
  // Logits and their gradient: 1024 x 32000 x 4 B x 2 = 262,144,000 B in fp32; bf16 over 4
  // chunks keeps 1024 x 32000 x 2 x 2 / 4 = 32,768,000 B.
  s.recompute = Recompute::kNone;
  EXPECT_NEAR(predict(m, c, r, s).memory.logits, 262144000, 1);
  plan::Run chunked = r;
  chunked.logits_bytes = 2;
  chunked.logits_chunks = 4;
  EXPECT_NEAR(predict(m, c, chunked, s).memory.logits, 32768000, 1);
  // Transformer Engine's fused cross-entropy stores the gradient over its bf16 input: one buffer,
  // 1024 x 32000 x 2 B = 65,536,000 B (against 131,072,000 for bf16 logits and a separate gradient).
  plan::Run in_place = r;
  in_place.logits_bytes = 2;
  in_place.logits_grad_in_place = true;
  EXPECT_NEAR(predict(m, c, in_place, s).memory.logits, 65536000, 1);
  // Gradient precision: bf16 gradients take half the fp32 ones.
  plan::Run bf16_grads = r;
  bf16_grads.grad_bytes = 2;
  EXPECT_NEAR(predict(m, c, bf16_grads, s).memory.gradients * 2, predict(m, c, r, s).memory.gradients, 1);
}

// (4) A fused SwiGLU backward (stack.h fused_swiglu_backward): Meta's xformers runs the SwiGLU
// MLP as one autograd function that keeps x, x1 = x W1 and x2 = x W3 and rebuilds
// silu(x1) * x2 in its backward kernel (facebookresearch/xformers xformers/ops/swiglu_op.py,
// _SwiGLUFusedFunc), so the down projection's input is not kept. A dense SwiGLU model (d 1024,
// f 4096, TP 1, 1024 tokens, one micro-batch in flight) keeps 2f = 8192 B a token and layer
// fewer: 2 layers x 1024 x 8192 = 16,777,216 B. The routed experts likewise: tiny_moe(2, 8, 2)
// sends 1024 tokens x top-2 = 2048 rows a layer to experts of width 256, 2 x 2048 x 256 x 2 =
// 2,097,152 B fewer. No time is charged (the backward computes silu(x1) for the gate gradients
// anyway), and a GELU model has no product to rebuild: nothing moves. Norm-act on SwiGLU frees
// the product, not the activation's two inputs (below).
TEST(Causes, AFusedSwigluBackwardKeepsNoDownProjectionInput) {
  model::ModelConfig dense = model::parse_model_config(
      "[model]\nname = \"tiny-swiglu\"\nvocab = 32000\nhidden = 1024\nlayers = 2\ntrain_seq_len = 1024\n"
      "[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\nhead_dim = 128\nrope_dims = 128\n"
      "[ffn]\nactivation = \"swiglu\"\nhidden = 4096\n",
      "tiny-swiglu.toml");
  Cluster c = tiny_cluster(1);
  c.nodes = 1;
  c.devices_per_node = 1;
  c.links = {LinkLevel{"none", 1, 1e12, 0, 1, "test"}};
  plan::Run r = make_run(1024, 1);
  Strategy kept, fused;
  fused.stack.fused_swiglu_backward = true;
  auto difference = [&](const model::ModelConfig& m) {
    const Prediction a = predict(m, c, r, kept), b = predict(m, c, r, fused);
    EXPECT_DOUBLE_EQ(a.time.step, b.time.step) << m.name;
    return a.memory.activations - b.memory.activations;
  };
  EXPECT_NEAR(difference(dense), 16777216, 1);
  EXPECT_NEAR(difference(tiny_moe(2, 8, 2)), 2097152, 1);
  EXPECT_EQ(difference(tiny_gpt()), 0);
  // Norm-act recomputation keeps each norm's and the activation's inputs and frees their outputs.
  // Per token and layer the dense SwiGLU model keeps norms 2d + 2d, qkv input 2d, q, k, v 6d,
  // log-sum-exp 4H = 32, o 2d, fc1 input 2d, SwiGLU inputs 4f, fc2 input 2f = 40,992 B; norm-act
  // frees the two norms' 4096 and the product's 2f = 8192 (session 26; SwiGLU's two inputs, 4f,
  // before), and the head's norm 2048 of its 4096: (2 x 28,704 + 2048) x 1024 = 60,882,944 B. With
  // the fused backward the product was never kept and norm-act frees the norms alone: the same.
  kept.recompute = fused.recompute = Recompute::kNormAct;
  EXPECT_NEAR(predict(dense, c, r, kept).memory.activations, 60882944, 1);
  EXPECT_NEAR(predict(dense, c, r, fused).memory.activations, 60882944, 1);
  kept.recompute = Recompute::kNone;
  EXPECT_NEAR(predict(dense, c, r, kept).memory.activations, (2 * 40992 + 4096) * 1024, 1);
  // FP8 storage of the GEMM inputs (act_bytes 1): the norms' outputs and the product are those
  // inputs, kept at 1 B, and norm-act frees them at 1 B, not 2 (review s26 MEDIUM 2). Kept a token
  // and layer: 40,992 less half the GEMM inputs (qkv, o, fc1 2d each, fc2 2f: 7,168), plus the
  // core's BF16 o kept again beside the o projection's FP8 copy (2d; test (3) above) = 35,872, the
  // head 4096 - 1024. Norm-act frees the norms' d + d and the product's f = 6,144 (12,288 before
  // this fix, more than was counted): (2 x 29,728 + 2048) x 1024 = 62,980,096 B, with or without
  // the fused backward (which keeps no product and frees none).
  plan::Run fp8 = r;
  fp8.act_bytes = 1;
  EXPECT_NEAR(predict(dense, c, fp8, kept).memory.activations, (2 * 35872 + 3072) * 1024, 1);
  kept.recompute = Recompute::kNormAct;
  EXPECT_NEAR(predict(dense, c, fp8, kept).memory.activations, 62980096, 1);
  EXPECT_NEAR(predict(dense, c, fp8, fused).memory.activations, 62980096, 1);
  // A stack file that sets it names its source, or is refused with the field named.
  expect_refused_without_source("fused_swiglu_backward", "fused_swiglu_source");
  EXPECT_TRUE(stack_from("fused_swiglu_backward = true\nfused_swiglu_source = \"xformers\"\n").fused_swiglu_backward);
  expect_refused_source_without_claim("fused_swiglu_backward", "fused_swiglu_source");
}

// (4b) Which x a fused SwiGLU backward keeps under TP with sequence parallelism (review s26
// MEDIUM 1): trex counts the FFN's input sequence-sharded (re-gathered in the backward, as
// Megatron's linear layers do), not the gathered tensor xformers' function would keep as passed.
// The dense SwiGLU model of (4) on TP 2 with sequence parallelism: every per-token, per-layer byte
// of (4)'s 40,992 is halved (norm inputs and the two gathered GEMM inputs qkv and fc1 over the
// sequence, the rest over heads and f): 20,496, and the fused backward drops the product 2f / 2
// = 4,096: 16,400 a token and layer. A gathered x kept whole would add d = 1024 more.
TEST(Causes, AFusedSwigluBackwardKeepsItsInputSequenceShardedUnderTp) {
  auto dense_with = [](int layers) {
    return model::parse_model_config(
        "[model]\nname = \"tiny-swiglu\"\nvocab = 32000\nhidden = 1024\nlayers = " + std::to_string(layers) +
            "\ntrain_seq_len = 1024\n[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\nhead_dim = 128\n"
            "rope_dims = 128\n[ffn]\nactivation = \"swiglu\"\nhidden = 4096\n",
        "tiny-swiglu.toml");
  };
  Cluster c = tiny_cluster(1);
  c.nodes = 1;
  c.devices_per_node = 2;
  c.links = {LinkLevel{"none", 2, 1e12, 0, 1, "test"}};
  plan::Run r = make_run(1024, 1);
  Strategy kept, fused;
  kept.tp = fused.tp = 2;
  kept.sequence_parallel = fused.sequence_parallel = true;
  fused.stack.fused_swiglu_backward = true;
  auto per_layer = [&](const Strategy& s) {
    return (predict(dense_with(4), c, r, s).memory.activations - predict(dense_with(2), c, r, s).memory.activations) / 2;
  };
  EXPECT_NEAR(per_layer(kept), 20496.0 * 1024, 1);
  EXPECT_NEAR(per_layer(fused), 16400.0 * 1024, 1);
}

// (7) A stack's eager elementwise kernels (session 26): InternEvo at fa7337b runs the SwiGLU as
// w3(F.silu(w1(x)) * w2(x)) (internlm/model/linear.py) and each residual norm on
// _residual.float() inside a checkpointed block (modeling_internlm.py); stack.h eager_swiglu and
// fp32_norm_input. By hand on the dense SwiGLU model of the test above (d 1024, f 4096, 2 layers,
// 1,024 tokens, one device at 2e12 B/s, no launch cost): the eager activation moves 10f B a token
// forward where the fused one moves 6f, 4f = 16,384 B more, and the model's backward doubles it:
// 3 x 16,384 x 1,024 tokens x 2 layers = 100,663,296 B = 50.331648 us; it keeps silu's output too,
// 2f x 1,024 x 2 = 16,777,216 B. Each FP32-input norm moves 12d B forward where a BF16 norm moves
// 4d, 8,192 B more, two a layer: 3 x 16,384 x 1,024 x 2 = 100,663,296 B = 50.331648 us, and keeps
// the same 2d. The head's norm is not a residual-stream norm of a layer and stays. GELU has no
// gates: eager_swiglu leaves it.
TEST(Causes, EagerSwigluAndFp32NormInputsMoveMoreBytesThanFusedKernels) {
  model::ModelConfig dense = model::parse_model_config(
      "[model]\nname = \"tiny-swiglu\"\nvocab = 32000\nhidden = 1024\nlayers = 2\ntrain_seq_len = 1024\n"
      "[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\nhead_dim = 128\nrope_dims = 128\n"
      "[ffn]\nactivation = \"swiglu\"\nhidden = 4096\n",
      "tiny-swiglu.toml");
  Cluster c = tiny_cluster(1);
  c.nodes = 1;
  c.devices_per_node = 1;
  c.links = {LinkLevel{"none", 1, 1e12, 0, 1, "test"}};
  plan::Run r = make_run(1024, 1);
  Strategy fused, eager, fp32, both;
  eager.stack.eager_swiglu = true;
  fp32.stack.fp32_norm_input = true;
  both.stack.eager_swiglu = both.stack.fp32_norm_input = true;
  const Prediction base = predict(dense, c, r, fused);
  const Prediction e = predict(dense, c, r, eager), n = predict(dense, c, r, fp32), b = predict(dense, c, r, both);
  EXPECT_NEAR(e.time.compute - base.time.compute, 50.331648e-6, 1e-12);
  EXPECT_NEAR(n.time.compute - base.time.compute, 50.331648e-6, 1e-12);
  EXPECT_NEAR(b.time.compute - base.time.compute, 100.663296e-6, 1e-12);
  EXPECT_NEAR(b.time.step - base.time.step, 100.663296e-6, 1e-12);
  EXPECT_NEAR(e.memory.activations - base.memory.activations, 16777216, 1);
  EXPECT_NEAR(n.memory.activations, base.memory.activations, 1);
  EXPECT_DOUBLE_EQ(predict(tiny_gpt(), c, r, eager).time.step, predict(tiny_gpt(), c, r, fused).time.step);
  // Norm-act recomputation frees only the product under eager_swiglu too (stack.h): both free it,
  // and eager still keeps silu's output, the same 2f x 1,024 x 2 = 16,777,216 B more than fused.
  Strategy fused_na = fused, eager_na = eager;
  fused_na.recompute = eager_na.recompute = Recompute::kNormAct;
  const double fused_na_bytes = predict(dense, c, r, fused_na).memory.activations;
  EXPECT_LT(fused_na_bytes, base.memory.activations);
  EXPECT_NEAR(predict(dense, c, r, eager_na).memory.activations - fused_na_bytes, 16777216, 1);
  // The shipped profile that sets them is InternEvo's; a stack file that sets either names its
  // source, or is refused with the field named.
  StackProfile ie = load_stack(source_path("configs/plan/stack/internevo-2023.toml"));
  EXPECT_TRUE(ie.eager_swiglu);
  EXPECT_TRUE(ie.fp32_norm_input);
  for (const char* field : {"eager_swiglu", "fp32_norm_input"}) expect_refused_without_source(field, "eager_ops_source");
  EXPECT_TRUE(stack_from("fp32_norm_input = true\neager_ops_source = \"code\"\n").fp32_norm_input);
  for (const char* field : {"eager_swiglu", "fp32_norm_input"}) expect_refused_source_without_claim(field, "eager_ops_source");
  EXPECT_TRUE(stack_from("eager_swiglu = true\nfp32_norm_input = false\neager_ops_source = \"code\"\n").eager_swiglu);
}

// (5) Explicit pipeline layouts: layers per stage, embedding, head and MTP placement.
TEST(Causes, PipelineLayoutsPlaceLayersEmbeddingHeadAndMtp) {
  std::vector<PipelineChunk> ch = pipeline_chunks({"Et*3|t*4|t*4|t*3mL", 0, 0}, 14, 1, 4, 1);
  ASSERT_EQ(ch.size(), 4u);
  EXPECT_EQ(ch[0].first, 0);
  EXPECT_EQ(ch[0].layers, 3);
  EXPECT_TRUE(ch[0].embedding);
  EXPECT_EQ(ch[1].first, 3);
  EXPECT_EQ(ch[2].first, 7);
  EXPECT_EQ(ch[3].first, 11);
  EXPECT_EQ(ch[3].layers, 3);
  EXPECT_EQ(ch[3].mtp, 1);
  EXPECT_TRUE(ch[3].head);
  // first 2 and last 3 of 14 layers over 4 chunks: the middle 9 split 5 and 4.
  std::vector<PipelineChunk> fl = pipeline_chunks({"", 2, 3}, 14, 0, 4, 1);
  EXPECT_EQ(fl[0].layers, 2);
  EXPECT_EQ(fl[1].layers, 5);
  EXPECT_EQ(fl[2].layers, 4);
  EXPECT_EQ(fl[3].layers, 3);
  // Default: even, the first chunks take the remainder.
  std::vector<PipelineChunk> ev = pipeline_chunks({}, 14, 0, 4, 1);
  EXPECT_EQ(ev[0].layers, 4);
  EXPECT_EQ(ev[3].layers, 3);
  // Refusals name the field.
  try {
    pipeline_chunks({"Et*3|t*4L", 0, 0}, 14, 0, 4, 1);
    ADD_FAILURE() << "accepted 2 chunks for pp 4";
  } catch (const InputError& e) {
    EXPECT_EQ(e.detail(), "names 2 chunks but pp x vpp = 4");
    EXPECT_NE(std::string(e.what()).find("strategy.pipeline_layout"), std::string::npos) << e.what();
  }
  try {
    pipeline_chunks({"Et*3|t|t|tL", 0, 0}, 14, 0, 4, 1);
    ADD_FAILURE() << "accepted 6 of 14 layers";
  } catch (const InputError& e) {
    EXPECT_EQ(e.detail(), "places 6 transformer layers but the model has 14");
  }
  // The step follows the heaviest stage. 4 layers, pp 2, 8 micro-batches per rank; per
  // micro-batch (forward + backward = 3 x forward at 100 TFLOPS) a layer costs
  // 3 x (GEMMs 2 x 1024 x 12 d^2 = 25.8 GFLOP + attention 4 x 1024 x 512 keys x 1024 = 2.1 GFLOP)
  // / 1e14 = 0.84 ms and the 32000-word head 3 x 2 x 1024 x 1024 x 32000 / 1e14 = 2.0 ms. Even (2 | 2 + head): the last rank takes
  // about 3.7 ms; "Et*3|tL" (3 | 1 + head) evens it to about 2.8 ms: the explicit layout is faster.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(1);
  Strategy s;
  s.pp = 2;
  plan::Run r = make_run(1024, 32);
  Prediction even = predict(m, c, r, s);
  s.layout.layout = "Et*3|tL";
  Prediction uneven = predict(m, c, r, s);
  EXPECT_LT(uneven.time.compute, even.time.compute * 0.85);
  EXPECT_GT(uneven.time.compute, even.time.compute * 0.6);
}

// (5) A layout that gives the embedding and the head a chunk of their own (Llama 3 405B, arXiv
// 2407.21783 section 3.3.2: one layer fewer on the first and the last stage, "the first model
// chunk on the first stage has only the embedding"): 126 layers + E + L = 128 one-layer chunks
// over PP 16, V 8. Chunk k runs on rank k mod 16, so rank 0 holds E and 7 layers, rank 15 7
// layers and the head, ranks 1-14 8 layers; the bubble is (pp - 1) / V = 15/8 micro-batch times.
TEST(Causes, TheLlama3LayoutGivesTheEmbeddingAndTheHeadAChunkEach) {
  ValidationCase vc = load_validation_case(source_path("configs/validation/llama3-405b-8k-8192gpu.toml"));
  ASSERT_EQ(vc.strategy.pp, 16);
  ASSERT_EQ(vc.strategy.vpp, 8);
  std::vector<PipelineChunk> ch = pipeline_chunks(vc.strategy.layout, 126, 0, 16, 8);
  ASSERT_EQ(ch.size(), 128u);
  EXPECT_TRUE(ch[0].embedding);
  EXPECT_EQ(ch[0].layers, 0);
  EXPECT_TRUE(ch[127].head);
  EXPECT_EQ(ch[127].layers, 0);
  // The predictor's own placement (review rplan4 LOW 5: not a mapping restated here).
  const Prediction p = evaluate(vc).prediction;
  ASSERT_EQ(p.rank_layers.size(), 16u);
  EXPECT_EQ(p.rank_layers[0], 7);
  EXPECT_EQ(p.rank_layers[15], 7);
  for (size_t r = 1; r < 15; ++r) EXPECT_EQ(p.rank_layers[r], 8) << "rank " << r;
  // 2048 sequences / DP 64 = 32 micro-batches; the bubble is 15/8 of the slowest rank's
  // micro-batch time (the per-micro-batch terms over 32), where V = 2 made it 15/2. This restates
  // predict.cc's formula from the same breakdown fields: it catches a change of vpp or of the
  // formula, not a wrong per-micro-batch time.
  ASSERT_EQ(p.micro_batches, 32);
  const TimeBreakdown& t = p.time;
  const double t_mb = (t.compute + t.launch + t.tp_comm + t.cp_comm + t.ep_comm + t.pp_comm) / 32.0;
  EXPECT_NEAR(t.bubble, 15.0 / 8.0 * t_mb, 1e-9 * t.bubble);
}

// (4) Llama 3 405B at 8K trained "without activation checkpointing" (arXiv 2407.21783 section
// 3.3.2). Session 19 (fixer fix35, review rplan5 HIGH 1 and 2) to session 25: trex predicted
// that it does not fit. Session 26: Meta's stack runs the SwiGLU MLP as one autograd function
// that rebuilds the down projection's input in its backward (meta-llama3.toml
// fused_swiglu_backward; Causes.AFusedSwigluBackwardKeepsNoDownProjectionInput), and the run fits
// as stated. What the file assumes, each from a statement: (a) gradients: "we use FP32 gradient
// accumulation during backward computation over multiple micro-batches and also reduce-scatter
// gradients in FP32 across data parallel workers in FSDP" (same section, "Numerical
// stability"): a whole fp32 accumulation buffer, reduce-scattered once after the last
// micro-batch (as PyTorch's pipelining stage runs FSDP: set_requires_gradient_sync(last_backward));
// the report's "shards optimizer states and gradients" holds at the optimizer step. That is
// trex's zero = 1. (b) the attention output FlashAttention keeps is the output projection's
// input, one tensor. (c) the H100's CUDA-visible 79.11 GiB = 84.94e9 B. (d) chunks in flight as
// Megatron-Core's interleaved schedule keeps them (in_flight.h), with N (micro-batches per
// virtual-stage group) = pp, its default: the report calls N tunable and does not state it.
// (e) the stack's fused SwiGLU backward (above). Pipeline rank 1 of the shipped 8,192-GPU file,
// by hand (TP 8 with sequence parallelism, 8 layers, d 16384, 128 heads of 128, 8 KV heads, FFN
// 53248; s = 8192 tokens a micro-batch, 1024 per TP rank):
//   parameters: a layer's q, o 2 x 16384^2, k, v 2 x 16384 x 1024, FFN 3 x 16384 x 53248, over
//   TP 8, plus its two norms (2 x 16384, whole): 398,491,648; x 8 layers = 3,187,933,184
//   weights 2 B: 6,375,866,368; gradients 4 B whole: 12,751,732,736; Adam 12 B / 64: 597,737,472
//   activations a layer (one chunk = one layer on rank 1): norm inputs 2 x 1024 x 32768 B, qkv
//   and fc1 inputs (gathered, kept sequence-sharded) 2 x 33,554,432, q 2 x 8192 x 2048, k and v
//   2 x 2 x 8192 x 128, log-sum-exp 4 x 8192 x 16, out-proj input (o) 2 x 8192 x 2048, SwiGLU
//   input 4 x 8192 x 6656: 167,772,160 + 38,273,024 + 218,103,808 = 424,148,992 B (a separate
//   down projection would keep its input too, 2 x 8192 x 6656 = 109,051,904 B more)
//   in flight on rank 1 (m = 32, pp 16, vpp 8): warm-up 2 x (16 - 1 - 1) + (8 - 1) x 16 = 140
//   chunks, + 1 at the first backward = 141 chunks (17.625 micro-batches; session 19's formula
//   min(m, pp - r) x (1 + (pp - 1) / (pp vpp)) gave 134.06 here, exact only on rank 0: 143)
//   activations 141 x 424,148,992 = 59,805,007,872; TP buffer 8192 x 2 x 16384 = 268,435,456;
//   reserved 4e9 -> total 83,798,779,904 B <= 84.94e9: fits (1.14 GB to spare).
// With the down projection's input kept (the stack without the fused backward): 141 x
// 533,200,896 = 75,181,326,336 of activations, 99,175,098,368 B in all: does not fit, as trex
// predicted until session 26.
TEST(Causes, Llama3s8KRunFitsAsStatedWithItsStacksFusedSwigluBackward) {
  ValidationCase vc = load_validation_case(source_path("configs/validation/llama3-405b-8k-8192gpu.toml"));
  ASSERT_EQ(vc.strategy.zero, 1);
  ASSERT_EQ(vc.strategy.recompute, Recompute::kNone);
  ASSERT_FALSE(vc.recompute_auto);
  ASSERT_EQ(vc.strategy.vpp, 8);
  ASSERT_TRUE(vc.strategy.stack.fused_swiglu_backward);
  EXPECT_DOUBLE_EQ(vc.cluster.hbm_bytes, 84.94e9);
  const ValidationResult r = evaluate(vc);
  EXPECT_EQ(r.prediction.micro_batches, 32);
  const MemoryBreakdown& mem = r.prediction.memory;
  EXPECT_EQ(mem.pipeline_rank, 1);
  EXPECT_NEAR(mem.weights, 6375866368.0, 1);
  EXPECT_NEAR(mem.gradients, 12751732736.0, 1);
  EXPECT_NEAR(mem.optimizer, 597737472.0, 1);
  EXPECT_NEAR(mem.activations, 59805007872.0, 16);
  EXPECT_NEAR(mem.comm_buffers, 268435456.0, 1);
  EXPECT_NEAR(mem.total(), 83798779904.0, 16);
  EXPECT_TRUE(mem.fits);
  // The same run with the down projection's input kept: over, as before session 26.
  ValidationCase kept = vc;
  kept.strategy.stack.fused_swiglu_backward = false;
  const ValidationResult rk = evaluate(kept);
  EXPECT_NEAR(rk.prediction.memory.activations, 75181326336.0, 16);
  EXPECT_NEAR(rk.prediction.memory.total(), 99175098368.0, 16);
  EXPECT_FALSE(rk.prediction.memory.fits);
  EXPECT_DOUBLE_EQ(rk.prediction.time.step, r.prediction.time.step);
  // Gradients sharded through the step instead (zero = 2): 199,245,824 B of gradients, 71.25 GB
  // in all. That reading's time (session 22): gradients kept sharded through 32 micro-batches
  // are reduce-scattered after every micro-batch's backward, in fp32 as the report states, 32
  // times the one reduce-scatter of zero = 1 (an exposed 0.19 s -> 4.15 s a step): the step grows
  // from 11.50 s to 16.10 s and the predicted MFU falls 25% below the report's 43% (430 TFLOPs),
  // so the report's own throughput argues for the whole buffer (zero = 1).
  ValidationCase z2 = vc;
  z2.strategy.zero = 2;
  const ValidationResult r2 = evaluate(z2);
  EXPECT_EQ(r2.prediction.memory.pipeline_rank, 1);
  EXPECT_NEAR(r2.prediction.memory.gradients, 199245824.0, 1);
  EXPECT_NEAR(r2.prediction.memory.total(), 71246292992.0, 16);
  EXPECT_LT(r2.error, -0.20);
  EXPECT_GT(r2.prediction.time.dp_comm, 20 * r.prediction.time.dp_comm);
  EXPECT_NEAR(r2.prediction.time.compute, r.prediction.time.compute, 1e-9);
}

// Megatron-Core's interleaved warm-up on each rank (schedules.py, get_pp_rank_microbatches:
// (pp - r - 1) x 2 + (vpp - 1) x pp, capped at m x vpp) and the peak of chunks in flight, worked
// out by hand.
// Llama 3's 8,192-GPU run (m 32, pp 16, vpp 8): rank 0 142 -> 143 alive, rank 1 140 -> 141,
// rank 15 112 -> 113; at 16,384 GPUs (m 16 = pp) 2 x 14 + 112 = 140 >= 128: rank 1 runs all
// 128 forwards before any backward. Without interleaving pp - r - 1, min(m, pp - r) alive.
// Uneven chunks, pp 2, vpp 2, m 4, rank 0, chunk bytes {1, 10}: warm-up 2 x (2 - 0 - 1) + 1 x 2
// = 4. Forward order (groups of pp = 2 micro-batches): c0 c0 c1 c1 | c0 c0 c1 c1; backward order
// the same with the chunks reversed: c1 c1 c0 c0 | c1 c1 c0 c0. Warm-up c0 c0 c1 c1 = 22; step 0
// forward c0 -> 23, backward c1 -> 13; step 1 forward c0 -> 14, backward c1 -> 4; step 2 forward
// c1 -> 14, backward c0 -> 13; step 3 forward c1 -> 23, backward c0 -> 22; then the cool-down only
// frees: peak 23 (5 equal chunks of the mean 5.5 would give 27.5).
TEST(Causes, InterleavedChunksInFlightFollowMegatronsWarmUpOnEveryRank) {
  EXPECT_EQ(warmup_chunks(32, 16, 8, 0), 142);
  EXPECT_EQ(warmup_chunks(32, 16, 8, 1), 140);
  EXPECT_EQ(warmup_chunks(32, 16, 8, 15), 112);
  EXPECT_EQ(warmup_chunks(16, 16, 8, 1), 128);
  EXPECT_EQ(warmup_chunks(32, 16, 1, 1), 14);
  const std::vector<double> one(8, 1.0);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 0, one), 143);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 1, one), 141);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 15, one), 113);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(16, 16, 1, one), 128);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 1, {1.0}), 15);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(4, 16, 1, {1.0}), 4);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(4, 2, 0, {1.0, 10.0}), 23);
}

// Megatron-Core's interleaved schedule order for a micro-batch group of N (schedules.py: the
// forward table in groups of N micro-batches, chunk by chunk within a group; the backward table
// the same with the chunks reversed; rank r runs (pp - r - 1) x 2 + (vpp - 1) x N forwards, then
// one forward and one backward at a time, then the remaining backwards), each forward of a chunk
// taking 1 and each backward 2 time units, sends free (asynchronous: an operation waits only for
// its input). `extra` lengthens every rank's warm-up by that many forwards (capped at all m x vpp).
// Returns the step's length, or -1 when the ranks deadlock (every rank's next operation waits on
// one that cannot run), and the most chunks each rank holds at once.
struct ScheduleRun {
  double length = -1;
  std::vector<long> peak;
};
ScheduleRun interleaved_schedule_run(long m, long pp, long vpp, long group, long extra = 0) {
  struct Op { bool fwd; long mb, v; };
  std::vector<long> ft_mb, ft_v;
  for (long first = 0; first < m; first += group)
    for (long v = 0; v < vpp; ++v)
      for (long i = first; i < std::min(m, first + group); ++i) ft_mb.push_back(i), ft_v.push_back(v);
  const long total = m * vpp;
  std::vector<std::vector<Op>> order(static_cast<size_t>(pp));
  for (long r = 0; r < pp; ++r) {
    const long warm = std::min(total, warmup_chunks(m, pp, vpp, r, group) + extra);
    auto f = [&](long k) { return Op{true, ft_mb[size_t(k)], ft_v[size_t(k)]}; };
    auto b = [&](long k) { return Op{false, ft_mb[size_t(k)], vpp - 1 - ft_v[size_t(k)]}; };
    for (long k = 0; k < warm; ++k) order[size_t(r)].push_back(f(k));
    for (long i = 0; warm + i < total; ++i) order[size_t(r)].push_back(f(warm + i)), order[size_t(r)].push_back(b(i));
    for (long k = total - warm; k < total; ++k) order[size_t(r)].push_back(b(k));
  }
  // done[fwd][r][mb][v]: finish time, < 0 while not run.
  std::vector<double> done(size_t(2 * pp * m * vpp), -1);
  auto at = [&](bool fwd, long r, long mb, long v) -> double& { return done[size_t(((fwd * pp + r) * m + mb) * vpp + v)]; };
  std::vector<size_t> next(size_t(pp), 0);
  std::vector<double> clock(size_t(pp), 0);
  std::vector<long> alive(size_t(pp), 0);
  ScheduleRun run;
  run.peak.assign(size_t(pp), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (long r = 0; r < pp; ++r) {
      for (size_t& k = next[size_t(r)]; k < order[size_t(r)].size(); ++k) {
        const Op& o = order[size_t(r)][k];
        // A forward needs the previous stage's forward of the same chunk (the first stage: the
        // last stage's previous chunk); a backward the next stage's backward (the last stage: the
        // first stage's next chunk, or its own forward for the model's last chunk).
        double ready = 0;
        if (o.fwd && r > 0) ready = at(true, r - 1, o.mb, o.v);
        else if (o.fwd && o.v > 0) ready = at(true, pp - 1, o.mb, o.v - 1);
        else if (!o.fwd && r < pp - 1) ready = at(false, r + 1, o.mb, o.v);
        else if (!o.fwd && o.v < vpp - 1) ready = at(false, 0, o.mb, o.v + 1);
        else if (!o.fwd) ready = at(true, r, o.mb, o.v);
        if (ready < 0) break;
        clock[size_t(r)] = std::max(clock[size_t(r)], ready) + (o.fwd ? 1 : 2);
        at(o.fwd, r, o.mb, o.v) = clock[size_t(r)];
        alive[size_t(r)] += o.fwd ? 1 : -1;
        run.peak[size_t(r)] = std::max(run.peak[size_t(r)], alive[size_t(r)]);
        moved = true;
      }
    }
  }
  for (long r = 0; r < pp; ++r)
    if (next[size_t(r)] < order[size_t(r)].size()) return run;
  run.length = *std::max_element(clock.begin(), clock.end());
  return run;
}

double interleaved_schedule_length(long m, long pp, long vpp, long group) {
  return interleaved_schedule_run(m, pp, vpp, group).length;
}

// The interleaved schedule's micro-batch group N (Megatron-Core's microbatch_group_size_per_vp_stage,
// strategy field microbatch_group) decides the warm-up and so the chunks in flight. Megatron-Core
// refuses N outside [pp, m] (schedules.py forward_backward_pipelining_with_interleaving), so N = pp,
// its default, keeps the fewest chunks it can run: a source that leaves N unstated (Llama 3) is read
// at the value most favourable to fitting, as recompute "auto" reads an unstated recomputation.
// By hand, pp 3, vpp 2, rank 0: warm-up 2 x 2 + 1 x N = 7 at N = 3, 8 at N = 4: peak 8 and 9
// chunks of m 6 x 2 = 12 (min(warm-up + 1, 12)).
// Why not N < pp: with N = 1 (pp 3, vpp 2, m 3) rank 0's warm-up is 5 forwards, rank 2's 1; rank
// 2 then wants the backward of micro-batch 0's chunk 0, which waits on rank 0's backward of its
// chunk 1, which rank 0 runs only after a forward of micro-batch 2's chunk 1, which waits on rank
// 2's forward of micro-batch 2's chunk 0, queued behind that backward: a deadlock
// (interleaved_schedule_length -1). N = 2 runs but stalls: 57 time units for m 6 against 42 at
// N = 3 (the ideal (m vpp + pp - 1) x 3 = 42; both simulated with F = 1, B = 2).
TEST(Causes, TheInterleavedMicroBatchGroupSetsTheWarmUpAndPpIsItsSmallest) {
  EXPECT_EQ(warmup_chunks(6, 3, 2, 0, 3), 7);
  EXPECT_EQ(warmup_chunks(6, 3, 2, 0, 4), 8);
  EXPECT_EQ(warmup_chunks(6, 3, 2, 0), warmup_chunks(6, 3, 2, 0, 3));
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(6, 3, 0, {1.0, 1.0}, 3), 8);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(6, 3, 0, {1.0, 1.0}, 4), 9);
  // Llama 3's 8,192-GPU run (m 32, pp 16, vpp 8), rank 1: 141 chunks at N = 16, 148 at 17.
  const std::vector<double> one(8, 1.0);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 1, one, 16), 141);
  EXPECT_DOUBLE_EQ(peak_in_flight_bytes(32, 16, 1, one, 17), 148);
  EXPECT_EQ(interleaved_schedule_length(3, 3, 2, 1), -1);
  EXPECT_EQ(interleaved_schedule_length(6, 3, 2, 2), 57);
  EXPECT_EQ(interleaved_schedule_length(6, 3, 2, 3), 42);
  // Llama 3's shape deadlocks at every N below pp under Megatron's order; N = pp runs ideal:
  // (32 x 8 + 15) x 3 = 813.
  for (long n = 1; n < 16; ++n) EXPECT_EQ(interleaved_schedule_length(32, 16, 8, n), -1) << n;
  EXPECT_EQ(interleaved_schedule_length(32, 16, 8, 16), 813);
  // The strategy check refuses N outside [pp, m] and a group without interleaving.
  model::ModelConfig m = tiny_gpt(4);
  Cluster c = tiny_cluster(1);
  plan::Run r = make_run(1024, 32);  // 8 devices, PP 2, DP 4: 8 micro-batches of 1
  Strategy s;
  s.tp = 1;
  s.pp = 2;
  s.vpp = 2;
  s.microbatch_group = 1;
  EXPECT_THROW(predict(m, c, r, s), InputError);
  s.microbatch_group = 9;
  EXPECT_THROW(predict(m, c, r, s), InputError);
  s.microbatch_group = 2;
  const double at_pp = predict(m, c, r, s).memory.activations;
  s.microbatch_group = 0;
  EXPECT_DOUBLE_EQ(predict(m, c, r, s).memory.activations, at_pp);
  s.microbatch_group = 4;
  EXPECT_GT(predict(m, c, r, s).memory.activations, at_pp);
  s.vpp = 1;
  s.microbatch_group = 2;
  EXPECT_THROW(predict(m, c, r, s), InputError);
}

// Llama 3's own pipeline schedule (arXiv 2407.21783 section 3.3.2 and Figure 6; session 21, issue
// 17 task 1). An analysis record, not a test of src/: it runs this file's schedule simulator only
// (the planner has no Llama 3 schedule, since no N beats N = pp here), and pins the figures that
// docs/plan.md quotes for why the 8K rows stay predicted not to fit. Its rules, restated: the number N of consecutive micro-batches a stage runs forward
// (or backward) is tunable, so a step may hold fewer micro-batches than stages or more than pp;
// each rank holds V interleaved stages; the bubble is (PP - 1) / (V M); point-to-point sends are
// asynchronous; the first and last stages hold one layer fewer, for memory and balance; tensors
// not needed later (each stage's input and output among them) are freed at once. Nothing else of
// the schedule (its warm-up) is published. The question is whether an N other than pp keeps fewer
// model chunks in flight on a rank. Modelled as Megatron's order (the same table of N-groups)
// with asynchronous sends (an operation waits only for its input) and each rank's warm-up
// lengthened by the fewest forwards that let the order run at all.
// By hand, pp 3, vpp 2, m 6 (12 chunks a rank): N = 3 warm-ups 2 x (2 - r) + 3 = 7, 5, 3 ->
// peaks 8, 6, 4, length 42 = (12 + 2) x 3, the stated bubble; N = 2 warm-ups 6, 4, 2 -> peaks 7,
// 5, 3, one chunk fewer on every rank for a step of 57 (+36%, beyond the stated bubble); N = 1
// warm-ups 5, 3, 1 deadlock (the test above) and keep deadlocking until each is 8 longer (13 -> 12,
// 11, 9): peaks 12, 12, 10, every forward of ranks 0 and 1 before their first backward, 78.
// Llama 3 405B 8K on 8,192 GPUs (m 32, pp 16, V 8), rank 1: N = 16 holds 141 chunks at the
// stated bubble (length 813 = (256 + 15) x 3). Below 16 the order deadlocks until the warm-ups
// reach the whole step: N = 15 runs only with 133 more forwards, N = 12 with 151, N = 8 with 183,
// then every rank runs all 256 forwards first (rank 1: 256 chunks) and the step takes 1130, 1143
// and 1482 (+39% to +82%). Above 16 the warm-up grows (148 at N = 17). At 16,384 GPUs (m 16 = pp)
// N = 16 already runs all 128 forwards of rank 1 first; N = 8 needs 55 more forwards and keeps as
// many, in 762 against 429. So under the report's own
// rules no N keeps fewer than 141 chunks on rank 1 for this shape: 141 x 533,200,896 B of
// activations with the down projection's input kept, and the 8K rows stayed predicted not to fit
// until session 26 (141 x 424,148,992 B with the stack's fused SwiGLU backward:
// Llama3s8KRunFitsAsStated...).
TEST(Causes, Llama3sFlexibleMicroBatchGroupKeepsNoFewerChunksThanNEqualsPpAtItsStatedBubble) {
  ScheduleRun a = interleaved_schedule_run(6, 3, 2, 3);
  EXPECT_EQ(a.length, 42);
  EXPECT_EQ(a.peak, (std::vector<long>{8, 6, 4}));
  a = interleaved_schedule_run(6, 3, 2, 2);
  EXPECT_EQ(a.length, 57);
  EXPECT_EQ(a.peak, (std::vector<long>{7, 5, 3}));
  EXPECT_EQ(interleaved_schedule_run(6, 3, 2, 1, 7).length, -1);
  a = interleaved_schedule_run(6, 3, 2, 1, 8);
  EXPECT_EQ(a.length, 78);
  EXPECT_EQ(a.peak, (std::vector<long>{12, 12, 10}));
  a = interleaved_schedule_run(32, 16, 8, 16);
  EXPECT_EQ(a.length, 813);
  EXPECT_EQ(a.peak[1], 141);
  struct Case { long n, extra; double length; };
  for (const Case& c : {Case{15, 133, 1130}, Case{12, 151, 1143}, Case{8, 183, 1482}}) {
    SCOPED_TRACE(c.n);
    for (long k = 0; k < c.extra; k += 8) EXPECT_EQ(interleaved_schedule_run(32, 16, 8, c.n, k).length, -1) << k;
    EXPECT_EQ(interleaved_schedule_run(32, 16, 8, c.n, c.extra - 1).length, -1);
    a = interleaved_schedule_run(32, 16, 8, c.n, c.extra);
    EXPECT_EQ(a.length, c.length);
    EXPECT_EQ(a.peak[1], 256);
  }
  EXPECT_EQ(interleaved_schedule_run(32, 16, 8, 17).peak[1], 148);
  // 16,384 GPUs (m 16 = pp): N = 16 runs all 128 forwards first on rank 1 (length 429 = (128 +
  // 15) x 3); N = 8 runs only with 55 more forwards, as many chunks, in 762.
  a = interleaved_schedule_run(16, 16, 8, 16);
  EXPECT_EQ(a.length, 429);
  EXPECT_EQ(a.peak[1], 128);
  EXPECT_EQ(interleaved_schedule_run(16, 16, 8, 8, 54).length, -1);
  a = interleaved_schedule_run(16, 16, 8, 8, 55);
  EXPECT_EQ(a.length, 762);
  EXPECT_EQ(a.peak[1], 128);
}

// (5) The bubble a pipeline layout leaves, as a number worked out by hand (review rplan4 LOW 5):
// the two-layer GPT above on 2 devices (PP 2, TP 1, DP 1), 100 TFLOPS, 2 TB/s, every factor 1,
// no launch cost, the stage link 100 GB/s; 1024 tokens a micro-batch, 4 micro-batches.
// One layer, forward (t = 1024 tokens, d = 1024, H = 8 x 128, f = 4096, causal: 512.5 keys):
//   GEMMs: qkv 2 t d 3d = 6,442,450,944 FLOPs, out-proj 2 t d d = 2,147,483,648, fc1 and fc2
//   2 t d f = 8,589,934,592 each -> 25,769,803,776 FLOPs / 1e14 = 257.69803776 us
//   attention core: 4 x 8 x 128 x 512.5 x 1024 = 2,149,580,800 FLOPs -> 21.495808 us
//   vector (bytes / 2e12): two residual adds 6 t d = 6,291,456 B, two norms 4 t d = 4,194,304 B,
//   RoPE t x 16 x 128 x 4 = 8,388,608 B, GELU 4 t f = 16,777,216 B -> 23.068672 us
//   backward 2 x GEMM + 2.5 x attention + 2 x vector: fwd + bwd = 3 x 257.69803776 +
//   3.5 x 21.495808 + 3 x 23.068672 = 917.53545728 us
// Head: norm 4 t d -> 2.097152 us; logits 2 t d 32000 = 67,108,864,000 FLOPs -> 671.08864 us;
//   fp32 cross-entropy t x 32000 x 12 B -> 196.608 us: fwd + bwd = 3 x 671.08864 + 3 x
//   198.705152 = 2609.381376 us. Embedding: t x 2d x 2 B -> 2.097152 us, x 3 = 6.291456 us.
// Sends: one each way a micro-batch, t x 2d = 2,097,152 B / 100 GB/s = 20.97152 us, x 2.
// Default layout (E+layer | layer+head): rank 1 = 917.53545728 + 2609.381376 + 41.94304 =
//   3568.85987328 us a micro-batch; 1F1B bubble (pp - 1) = 1 micro-batch time: 3.56885987328 ms.
// Layout "Ett|L" (both layers and the embedding on rank 0, the head alone on rank 1): rank 0 =
//   2 x 917.53545728 + 6.291456 + 41.94304 = 1883.30541056 us, rank 1 = 2609.381376 + 41.94304 =
//   2651.324416 us: the slowest rank paces the pipeline, bubble 2.651324416 ms.
TEST(Causes, APipelineLayoutSetsTheBubbleThroughItsSlowestRank) {
  model::ModelConfig m = tiny_gpt();
  Cluster c = tiny_cluster(1);
  c.devices_per_node = 2;
  c.links = {LinkLevel{"nvlink", 2, 100e9, 0, 1, "test"}};
  Strategy s;
  s.tp = 1;
  s.pp = 2;
  s.recompute = Recompute::kNone;
  plan::Run r = make_run(1024, 4);
  const Prediction even = predict(m, c, r, s);
  ASSERT_EQ(even.micro_batches, 4);
  EXPECT_NEAR(even.time.bubble, 3.56885987328e-3, 1e-12);
  EXPECT_NEAR(even.time.pp_comm, 4 * 41.94304e-6, 1e-12);
  s.layout = {"Ett|L", 0, 0};
  const Prediction head_alone = predict(m, c, r, s);
  ASSERT_EQ(head_alone.rank_layers, (std::vector<long>{2, 0}));
  EXPECT_NEAR(head_alone.time.bubble, 2.651324416e-3, 1e-12);
}

// (6) Scale-dependent losses: stragglers and collectives at thousands of devices.
TEST(Causes, StragglerAndCollectiveLossesGrowWithScale) {
  Cluster c = tiny_cluster(2);
  c.scale.straggler_cv = 0.01;
  c.scale.bw_loss_per_doubling = 0.01;
  // cv sqrt(2 ln N): N = 256 -> 0.01 x sqrt(11.0904) = 3.330%; N = 12,288 -> 0.01 x sqrt(18.8326) = 4.340%.
  EXPECT_NEAR(straggler_loss(c, StackProfile{}, 256), 0.033302, 1e-6);
  EXPECT_NEAR(straggler_loss(c, StackProfile{}, 12288), 0.043396, 1e-6);
  StackProfile mitigated;
  mitigated.straggler_scale = 0.5;  // MegaScale-style straggler mitigation
  EXPECT_NEAR(straggler_loss(c, mitigated, 12288), 0.021698, 1e-6);
  // A collective spanning 8 nodes keeps (1 - 0.01)^3 = 0.970299 of the scale-out bandwidth.
  EXPECT_NEAR(scale_bw_factor(c, 8), 0.970299, 1e-9);
  // All-reduce of 1 GB over 2 nodes with one member per node (2 ranks, extent 16: the DP group
  // of TP 8): 2 x 1/2 x 1e9 / (10e9 x 0.99) = 0.101010 s.
  EXPECT_NEAR(all_reduce_s(c, 2, 16, 1e9), 2 * 0.5 * 1e9 / (10e9 * 0.99), 1e-9);
  // With all 8 devices of each node in the group, 8 rings share the node's 8 NICs:
  // 2 x 15/16 x 1e9 / (8 x 10e9 x 0.99) = 0.023674 s (below NVLink's 100 GB/s).
  EXPECT_NEAR(all_reduce_s(c, 16, 16, 1e9), 2 * 15.0 / 16 * 1e9 / (8 * 10e9 * 0.99), 1e-9);
}

// (3, 6) Ring collectives across nodes: a group with k members in every node runs k rings side
// by side, one through each member's NIC, so the node's inter-node traffic splits over k NICs
// while each member still moves the whole ring volume over NVLink: B = min(k x NIC, NVLink).
// This is why an FSDP group over whole nodes gathers at near-NVLink rates (MosaicML's MPT-13B
// on H100 holds 39.6-40.0% MFU from 8 to 64 GPUs, llm-foundry benchmarking README).
TEST(Causes, RingCollectivesAcrossNodesUseEveryMembersNic) {
  Cluster c = tiny_cluster(4);  // NVLink 100 GB/s, IB 10 GB/s per device, 8 devices a node
  EXPECT_EQ(ring_members_per_domain(32, 32, 8), 8);
  EXPECT_EQ(ring_members_per_domain(8, 32, 8), 2);   // stride 4: ranks 0 and 4 of each node
  EXPECT_EQ(ring_members_per_domain(4, 32, 8), 1);   // stride 8: one rank a node (TP 8)
  EXPECT_EQ(ring_members_per_domain(4, 4, 8), 4);    // inside one node
  const double S = 1e9;
  // 32 ranks, 8 a node: min(8 x 10, 100) = 80 GB/s -> 31/32 x 1e9 / 80e9 = 0.012109375 s.
  EXPECT_NEAR(all_gather_s(c, 32, 32, S), 0.012109375, 1e-12);
  // 8 ranks, 2 a node: 20 GB/s -> 7/8 x 1e9 / 20e9 = 0.04375 s.
  EXPECT_NEAR(all_gather_s(c, 8, 32, S), 0.04375, 1e-12);
  // 4 ranks, 1 a node: the NIC alone, 3/4 x 1e9 / 10e9 = 0.075 s.
  EXPECT_NEAR(all_gather_s(c, 4, 32, S), 0.075, 1e-12);
  // NVLink caps it: at 50 GB/s the 32-rank gather takes 31/32 x 1e9 / 50e9 = 0.019375 s.
  c.links[0].bw_unidir = 50e9;
  EXPECT_NEAR(all_gather_s(c, 32, 32, S), 0.019375, 1e-12);
  EXPECT_NEAR(all_reduce_s(c, 32, 32, S), 2 * 0.019375, 1e-12);
  // The all-to-all is not a ring: each rank's own NIC carries its 24 of 32 remote shares,
  // 24/32 x 1e9 / 10e9 = 0.075 s.
  EXPECT_NEAR(all_to_all_s(c, 32, 1, S), 0.075, 1e-12);
}

// (7) Named software-stack profiles: efficiency scales and schedule defaults that a run selects.
TEST(Causes, StackProfilesScaleEfficienciesAndSetScheduleDefaults) {
  StackProfile core = load_stack(source_path("configs/plan/stack/megatron-core.toml"));
  EXPECT_EQ(core.name, "megatron-core");
  EXPECT_FALSE(core.source.empty());
  StackProfile foundry = load_stack(source_path("configs/plan/stack/llm-foundry.toml"));
  // dgx-a100: matmul 0.80 of 312 TFLOPS = 249.6; llm-foundry x0.92 = 229.632 TFLOPS.
  Cluster a100 = shipped_cluster("dgx-a100");
  EXPECT_NEAR(roofs(a100, StackProfile{}).matmul, 249.6e12, 1e6);
  EXPECT_NEAR(roofs(a100, foundry).matmul, 229.632e12, 1e6);
  // An older release of the same stack: NeMo 24.07 on dgx-h100, matmul 0.70 of 989 TFLOPS =
  // 692.3, x0.79 = 546.917 TFLOPS; everything else as megatron-core.
  StackProfile nemo = load_stack(source_path("configs/plan/stack/nemo-24.07.toml"));
  Cluster h100 = shipped_cluster("dgx-h100");
  EXPECT_NEAR(roofs(h100, core).matmul, 692.3e12, 1e6);
  EXPECT_NEAR(roofs(h100, nemo).matmul, 546.917e12, 1e6);
  EXPECT_NEAR(nemo.tp_overlap, core.tp_overlap, 1e-12);
  EXPECT_NEAR(nemo.step_overhead, core.step_overhead, 1e-12);
  // llm-foundry as it ran on H100 in 2023: 692.3 x 0.74 = 512.302 TFLOPS, its other fields as
  // llm-foundry's (FSDP prefetch, no TP overlap).
  StackProfile foundry_h100 = load_stack(source_path("configs/plan/stack/llm-foundry-h100-2023.toml"));
  EXPECT_NEAR(roofs(h100, foundry_h100).matmul, 512.302e12, 1e6);
  EXPECT_EQ(foundry_h100.zero3_prefetch, foundry.zero3_prefetch);
  EXPECT_NEAR(foundry_h100.step_overhead, foundry.step_overhead, 1e-12);
  // Megatron-LM at commit 285068c8 (2023, the MegaScale paper's baseline): the 2021 profile's
  // mechanisms (no TP, DP or PP overlap) and its own step overhead. On the paper's Table 3
  // baseline (175B, 256 A100, batch 256) the step is base x (1 + 0.0333 + 0.21): stragglers
  // 0.01 x sqrt(2 ln 256) = 0.033302 of the modelled terms, the profile's 0.21 on top; the 2021
  // profile charges 0.06 on the same terms.
  StackProfile mlm2021 = load_stack(source_path("configs/plan/stack/megatron-lm.toml"));
  StackProfile mlm2023 = load_stack(source_path("configs/plan/stack/megatron-lm-2023.toml"));
  EXPECT_EQ(mlm2023.dp_overlap, mlm2021.dp_overlap);
  EXPECT_EQ(mlm2023.pp_overlap, mlm2021.pp_overlap);
  EXPECT_NEAR(mlm2023.tp_overlap, mlm2021.tp_overlap, 1e-12);
  {
    ValidationCase vc = load_validation_case(
        source_path("configs/validation/megascale-2402-megatron-lm-175b-256gpu-bs256.toml"));
    EXPECT_EQ(vc.strategy.stack.name, "megatron-lm-2023");
    const TimeBreakdown t = evaluate(vc).prediction.time;
    const double base = t.step - t.straggler - t.overhead;
    EXPECT_NEAR(t.overhead / base, 0.21, 1e-9);
    EXPECT_NEAR(t.straggler / base, 0.01 * std::sqrt(2 * std::log(256.0)), 1e-9);
    vc.strategy.stack = mlm2021;
    const TimeBreakdown t21 = evaluate(vc).prediction.time;
    EXPECT_EQ(t21.overhead, 0);  // refit on its fit rows with sequence parallelism off (session 17)
    EXPECT_NEAR(t21.step - t21.straggler - t21.overhead, base, 1e-9 * base);
  }
  // MegaScale (arXiv 2402.15627 section 3.2): TP, DP and PP communication overlapped.
  StackProfile megascale = load_stack(source_path("configs/plan/stack/megascale.toml"));
  EXPECT_TRUE(megascale.pp_overlap);
  EXPECT_TRUE(megascale.dp_overlap);
  EXPECT_NEAR(megascale.tp_overlap, 0.8, 1e-12);
  StackProfile hai = load_stack(source_path("configs/plan/stack/hai-llm.toml"));
  EXPECT_EQ(hai.moe_overlap, MoeOverlap::kDualPipe);
  EXPECT_NEAR(hai.comm_sm_fraction, 0.15, 1e-12);
  // A strategy that states no overlap takes the stack's; a stated one wins.
  std::string path = (std::filesystem::temp_directory_path() / ("trex-stack-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path) << "[strategy]\ntp = 8\n";
  EXPECT_NEAR(load_strategy(path, core).tp_overlap, core.tp_overlap, 1e-12);
  EXPECT_EQ(load_strategy(path, hai).moe_overlap, MoeOverlap::kDualPipe);
  std::ofstream(path) << "[strategy]\ntp = 8\ntp_overlap = 0\n";
  EXPECT_EQ(load_strategy(path, core).tp_overlap, 0);
  // pp_overlap: off unless the stack or the strategy says so.
  EXPECT_FALSE(load_strategy(path, core).pp_overlap);
  std::ofstream(path) << "[strategy]\ntp = 8\npp_overlap = true\n";
  EXPECT_TRUE(load_strategy(path, core).pp_overlap);
  std::ofstream(path) << "[stack]\nname = \"x\"\nsource = \"s\"\npp_overlap = true\n";
  StackProfile overlapped = load_stack(path);
  EXPECT_TRUE(overlapped.pp_overlap);
  std::ofstream(path) << "[strategy]\ntp = 8\n";
  EXPECT_TRUE(load_strategy(path, overlapped).pp_overlap);
  // A bad stack file names the field.
  std::ofstream(path) << "[stack]\nname = \"x\"\nsource = \"s\"\nmoe_overlap = \"sometimes\"\n";
  try {
    load_stack(path);
    ADD_FAILURE() << "accepted a bad moe_overlap";
  } catch (const InputError& e) {
    EXPECT_EQ(e.detail(), "stack.moe_overlap: is \"sometimes\", expected none, 1f1b-a2a or dualpipe");
  }
  std::filesystem::remove(path);
}

// (7) A stack's attention kernel generation (session 21): InternEvo's 7B table ran FlashAttention
// v1.0.5 (InternLM/InternEvo doc/en/install.md), and FlashAttention-2 is "around 2x" FlashAttention
// (arXiv 2307.08691, abstract), while the clusters' attention efficiency is FlashAttention-2's
// (A100 0.55). So `internevo-2023` is `deepspeed` with attention_scale 0.5, nothing fitted.
// By hand, internevo-a100-roce: attention roof 312 x 0.55 = 171.6 TFLOPS under deepspeed, x 0.5 =
// 85.8 under internevo-2023; GEMM roof unchanged (312 x 0.80 = 249.6).
// The 8-GPU row (tp 1, zero1 8: InternLM-7B, 32 layers, 32 heads of 128, sequence 2048, micro_bsz
// 2 x micro_num 4 = 16,384 tokens a GPU a step): the causal attention core a layer, forward,
// 4 x 32 x 128 x 1024.5 keys (the mean of 1..2048) x 16,384 tokens = 275,012,124,672 FLOPs;
// x 32 layers x 3.5 (forward 1, backward 2.5) = 30,801,357,963,264 FLOPs: 0.179495093 s at
// 171.6 TFLOPS, twice that at 85.8, so the compute term grows by 0.179495093 s and nothing else
// moves (the comparison keeps the profile's eager SwiGLU and FP32 norms, session 26, on both
// sides). The step overhead is the one value fitted on this profile (session 26: 0.11, the lowest
// mean |error| of its 20 fit rows; deepspeed's 0.05 until then), a fraction of the step before
// losses: on the same row it is 0.11 x the modelled terms.
TEST(Causes, AFlashAttentionOneStackRunsTheAttentionCoreAtHalfTheFlashAttentionTwoRate) {
  StackProfile ds = load_stack(source_path("configs/plan/stack/deepspeed.toml"));
  StackProfile ie = load_stack(source_path("configs/plan/stack/internevo-2023.toml"));
  EXPECT_EQ(ie.name, "internevo-2023");
  EXPECT_NEAR(ie.attention_scale, 0.5, 1e-12);
  EXPECT_EQ(ie.param_gather_overlap, ds.param_gather_overlap);
  EXPECT_EQ(ie.dp_overlap, ds.dp_overlap);
  EXPECT_NEAR(ie.step_overhead, 0.11, 1e-12);
  Cluster c = shipped_cluster("internevo-a100-roce");
  EXPECT_NEAR(roofs(c, ds).attention, 171.6e12, 1e6);
  EXPECT_NEAR(roofs(c, ie).attention, 85.8e12, 1e6);
  EXPECT_NEAR(roofs(c, ie).matmul, roofs(c, ds).matmul, 1e-3);
  ValidationCase vc = load_validation_case(source_path("configs/validation/internevo-7b-a100-tp1-zero1-8-8gpu.toml"));
  EXPECT_EQ(vc.strategy.stack.name, "internevo-2023");
  const TimeBreakdown half = evaluate(vc).prediction.time;
  EXPECT_NEAR(half.overhead, 0.11 * (half.step - half.straggler - half.overhead), 1e-12);
  vc.strategy.stack.attention_scale = ds.attention_scale;
  const TimeBreakdown full = evaluate(vc).prediction.time;
  EXPECT_NEAR(half.compute - full.compute, 0.179495093, 1e-9);
  EXPECT_NEAR(half.dp_comm, full.dp_comm, 1e-12);
  EXPECT_NEAR(half.optimizer, full.optimizer, 1e-12);
}

// (7) An older release of a stack on Hopper (session 21): FlagPerf's H100 rows ran Megatron-Core
// core_v0.6.0 in NGC PyTorch 24.02 (FlagPerf's megatron_core060 Dockerfile), older than NeMo 24.07,
// which NVIDIA's own tables put 1.20x behind Megatron-Bridge 25.11 on Llama 3 8B on 8 DGX-H100 in
// FP8 (12036 vs 14451 tokens/s; not one layout: NeMo's row CP 2 with delayed scaling, Bridge's CP 1
// with current scaling): `megatron-core-0.6-hopper` is megatron-core with matmul_scale 0.83, that
// pair's ratio taken as the upper end (an older release at most as fast), not fitted. By hand, dgx-h100: 0.70 x 989 TFLOPS = 692.3, x 0.83 =
// 574.609 TFLOPS; everything else as megatron-core. The seven FlagPerf H100 rows select it; its
// A800 rows (same image, no published A100 pair) keep megatron-core.
TEST(Causes, AnOlderMegatronCoreOnHopperRunsGemmsAtThePublishedReleaseRatio) {
  StackProfile core = load_stack(source_path("configs/plan/stack/megatron-core.toml"));
  StackProfile old = load_stack(source_path("configs/plan/stack/megatron-core-0.6-hopper.toml"));
  EXPECT_EQ(old.name, "megatron-core-0.6-hopper");
  EXPECT_NEAR(old.matmul_scale, 12036.0 / 14451.0, 0.005);  // 0.8329, to two places
  Cluster h100 = shipped_cluster("dgx-h100");
  EXPECT_NEAR(roofs(h100, old).matmul, 574.609e12, 1e6);
  EXPECT_NEAR(roofs(h100, old).attention, roofs(h100, core).attention, 1);
  EXPECT_NEAR(old.tp_overlap, core.tp_overlap, 1e-12);
  EXPECT_NEAR(old.step_overhead, core.step_overhead, 1e-12);
  EXPECT_NEAR(old.launch_scale, core.launch_scale, 1e-12);
  EXPECT_NEAR(old.moe_host_eager_s, core.moe_host_eager_s, 1e-12);
  EXPECT_NEAR(old.moe_host_per_expert_s, core.moe_host_per_expert_s, 1e-12);
  long hopper = 0, a800 = 0;
  for (const ValidationCase& vc : load_validation_dir(source_path("configs/validation"))) {
    if (vc.name.rfind("flagperf-", 0) != 0) continue;
    if (vc.name.find("-h100-") != std::string::npos) {
      EXPECT_EQ(vc.strategy.stack.name, "megatron-core-0.6-hopper") << vc.name;
      ++hopper;
    } else if (vc.name.find("-a800-") != std::string::npos) {
      EXPECT_EQ(vc.strategy.stack.name, "megatron-core") << vc.name;
      ++a800;
    }
  }
  EXPECT_EQ(hopper, 7);
  EXPECT_EQ(a800, 9);
}

// (7b) The same bound for an older release still (session 22): FlagPerf's three Llama 2 70B H800
// rows ran FlagScale at git 26cd664 (2024-01-11) in NGC PyTorch 23.09 (FlagPerf's nvidia `megatron`
// image: its Dockerfile and megatron_install.sh), whose vendored Megatron-Core is 0.4.0rc0
// (FlagScale megatron/core/package_info.py at that commit): older than core_v0.6.0 and NeMo 24.07,
// so `megatron-core-0.4-hopper` takes the same upper end, 0.83, and is megatron-core otherwise. By
// hand, flagperf-h800-ib200: 0.70 x 989 TFLOPS = 692.3, x 0.83 = 574.609 TFLOPS. The three H800
// rows select it, and on them it is the GEMM rate alone that moves: the predicted step's compute
// grows and its communication terms stay as they were.
TEST(Causes, FlagScalesMegatronCoreZeroFourOnH800TakesTheSameReleaseBound) {
  StackProfile core = load_stack(source_path("configs/plan/stack/megatron-core.toml"));
  StackProfile v06 = load_stack(source_path("configs/plan/stack/megatron-core-0.6-hopper.toml"));
  StackProfile v04 = load_stack(source_path("configs/plan/stack/megatron-core-0.4-hopper.toml"));
  EXPECT_EQ(v04.name, "megatron-core-0.4-hopper");
  EXPECT_NEAR(v04.matmul_scale, v06.matmul_scale, 1e-12);
  Cluster h800 = shipped_cluster("flagperf-h800-ib200");
  EXPECT_NEAR(roofs(h800, v04).matmul, 574.609e12, 1e6);
  EXPECT_NEAR(roofs(h800, v04).attention, roofs(h800, core).attention, 1);
  EXPECT_NEAR(roofs(h800, v04).memory, roofs(h800, core).memory, 1);
  EXPECT_NEAR(v04.tp_overlap, core.tp_overlap, 1e-12);
  EXPECT_NEAR(v04.step_overhead, core.step_overhead, 1e-12);
  EXPECT_NEAR(v04.launch_scale, core.launch_scale, 1e-12);
  EXPECT_EQ(v04.dp_overlap, core.dp_overlap);
  EXPECT_EQ(v04.vocab_divisible_by, core.vocab_divisible_by);
  long h800_rows = 0;
  for (const ValidationCase& vc : load_validation_dir(source_path("configs/validation"))) {
    if (vc.name.rfind("flagperf-llama2-70b-h800-", 0) != 0) continue;
    EXPECT_EQ(vc.strategy.stack.name, "megatron-core-0.4-hopper") << vc.name;
    ++h800_rows;
  }
  EXPECT_EQ(h800_rows, 3);
  ValidationCase vc =
      load_validation_case(source_path("configs/validation/flagperf-llama2-70b-h800-bf16-tp8pp4dp1-gbs44-32gpu.toml"));
  const TimeBreakdown older = evaluate(vc).prediction.time;
  vc.strategy.stack = core;
  const TimeBreakdown newer = evaluate(vc).prediction.time;
  EXPECT_GT(older.compute, newer.compute * 1.05);
  EXPECT_LT(older.compute, newer.compute / 0.83 + 1e-9);
  EXPECT_NEAR(older.tp_comm, newer.tp_comm, 1e-12);
  EXPECT_NEAR(older.pp_comm, newer.pp_comm, 1e-12);
  EXPECT_NEAR(older.dp_comm, newer.dp_comm, 1e-12);
}

// The validation split is a function of the run name alone (decided before any factor was set).
TEST(Causes, ValidationSplitIsFixedByTheRunName) {
  EXPECT_EQ(split_of("megatron-gpt-18.4b"), Split::kHeldOut);
  EXPECT_EQ(split_of("megatron-gpt-310.1b"), Split::kFit);
  std::vector<ValidationCase> cases = load_validation_dir(source_path("configs/validation"));
  long held = 0;
  for (const ValidationCase& v : cases) held += v.split == Split::kHeldOut;
  EXPECT_GE(cases.size(), 40u);
  EXPECT_GT(held, long(cases.size()) / 5);
  EXPECT_LT(held, long(cases.size()) / 2);
}

}  // namespace
}  // namespace trex::plan
