// The tuning file (parse, write, errors with their line) and the tunable kernels: every kernel
// passes the suite's gate (poisoned outputs, reference, inputs unchanged, determinism) under
// legal configurations at the edges of their ranges, and the untuned path is unchanged.
#include "trex/kernels/tuning.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/kernel_suite.h"
#include "trex/util/error.h"

namespace trex::kernels {
namespace {

// Restores "no tuning" after each test, whatever it set.
struct TuningGuard {
  ~TuningGuard() { set_active_tuning(nullptr); }
};

std::string error_of(const std::string& text) {
  try {
    Tuning::parse(text, "t.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Tuning, ShapeClassesRoundUpToPowersOfTwo) {
  EXPECT_EQ(shape_class({1000, 4096, 1}), "1024x4096x1");
  EXPECT_EQ(shape_buckets("1024x4096x1"), (std::vector<int>{10, 12, 0}));
  EXPECT_TRUE(shape_buckets("1000x4096").empty());
  EXPECT_TRUE(shape_buckets("axb").empty());
}

TEST(Tuning, ParsesWritesAndLooksUp) {
  Tuning t = Tuning::parse(R"([hardware]
name = "test machine"
features = "avx2"
[[kernel]]
name = "gemm"
shape = "256x256x256"
mc = 96
kc = 128
[[kernel]]
name = "gemm"
shape = "*"
split = 2
[[kernel]]
name = "swiglu.fwd"
block_elems = 4096
)", "t.toml");
  EXPECT_EQ(t.hardware_name, "test machine");
  ASSERT_EQ(t.entries.size(), 3u);
  ASSERT_NE(t.find("gemm", "256x256x256"), nullptr);
  EXPECT_EQ(t.find("gemm", "256x256x256")->at("kc"), 128);
  EXPECT_EQ(t.find("gemm", "512x512x512")->at("split"), 2);  // the "*" entry
  EXPECT_EQ(t.find("rmsnorm.fwd", "4x4"), nullptr);
  EXPECT_EQ(t.find("swiglu.fwd", "16x16")->at("block_elems"), 4096);
  Tuning back = Tuning::parse(t.to_toml(), "again.toml");
  ASSERT_EQ(back.entries.size(), 3u);
  EXPECT_EQ(back.entries[0].params, t.entries[0].params);
  EXPECT_EQ(back.entries[1].shape, "*");
  EXPECT_EQ(back.hardware_features, "avx2");
}

TEST(Tuning, BadFilesNameTheLineAndField) {
  EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\nmc = \n").find("t.toml:3"), std::string::npos);
  EXPECT_NE(error_of("[[kernel]]\nname = \"nope\"\n").find("not a tunable kernel"), std::string::npos);
  EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\nfoo = 3\n").find("gemm.foo"), std::string::npos);
  std::string e = error_of("[[kernel]]\nname = \"gemm\"\nkc = 12\n");
  EXPECT_NE(e.find("t.toml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("multiple of 8"), std::string::npos) << e;
  EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\nkc = 1.5\n").find("integer"), std::string::npos);
  EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\nshape = \"300x2\"\n").find("shape class"),
            std::string::npos);
  EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\n[[kernel]]\nname = \"gemm\"\n").find("second entry"),
            std::string::npos);
  EXPECT_NE(error_of("[other]\n").find("unknown table"), std::string::npos);
  if (!core::isa_supported(core::Isa::kAvx512)) {
    EXPECT_NE(error_of("[[kernel]]\nname = \"gemm\"\nukernel = 3\n").find("not supported"),
              std::string::npos);
  }
}

// One legal configuration of a kernel's parameters: a value at lo, hi or in between.
ParamMap pick(const std::string& kernel, std::mt19937& rng) {
  ParamMap p;
  for (const TunableParam& tp : params_of(kernel)) {
    int64_t hi = tp.hi;
    if (tp.name == std::string("block_elems")) hi = 1 << 16;  // keeps one case fast
    if (tp.name == std::string("nc")) hi = 4096;
    int64_t v;
    switch (rng() % 4) {
      case 0: v = tp.fallback; break;
      case 1: v = tp.lo; break;
      case 2: v = hi; break;
      default: v = tp.lo + int64_t(rng() % uint64_t(hi - tp.lo + 1)); break;
    }
    if (tp.step > 1) v = v / tp.step * tp.step;
    if (tp.name == std::string("ukernel") && v != 0) {
      while (v > 1 && !core::isa_supported(v == 3 ? core::Isa::kAvx512 : core::Isa::kAvx2)) --v;
    }
    check_param(kernel, tp.name, v);
    p[tp.name] = v;
  }
  return p;
}

TEST(Tuning, EveryTunableKernelPassesTheGateUnderLegalConfigurations) {
  TuningGuard guard;
  core::ThreadPool pool(2);
  std::mt19937 rng(7);
  for (const std::string& k : tunable_kernels()) {
    for (int trial = 0; trial < 6; ++trial) {
      auto t = std::make_shared<Tuning>();
      ParamMap p = pick(k, rng);
      t->set(k, "*", p);
      set_active_tuning(t);
      for (KernelCase& c : make_cases(k, SuiteSize::kCheck, uint32_t(trial + 1), &pool)) {
        CheckResult r = check_case(c);
        std::string cfg;
        for (const auto& [n, v] : p) cfg += n + "=" + std::to_string(v) + " ";
        EXPECT_TRUE(r.passed) << k << " " << c.dtype << " " << c.shape << " with " << cfg << ": "
                              << r.message;
      }
    }
  }
}

TEST(Tuning, GemmSplitAndMicroKernelKeepTheBitsAtOneKc) {
  TuningGuard guard;
  core::ThreadPool pool(2);
  const int64_t m = 70, n = 90, k = 300;
  std::vector<float> a(m * k), b(k * n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  auto run = [&](const ParamMap& p) {
    auto t = std::make_shared<Tuning>();
    t->set("gemm", shape_class({m, n, k}), p);
    set_active_tuning(t);
    std::vector<float> c(m * n, 0.f);
    GemmOptions go;
    go.pool = &pool;
    sgemm(Trans::kNo, Trans::kNo, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n, go);
    return c;
  };
  std::vector<float> base = run({{"kc", 128}, {"split", 1}});
  EXPECT_EQ(run({{"kc", 128}, {"split", 2}}), base);
  EXPECT_EQ(run({{"kc", 128}, {"mc", 24}, {"nc", 32}}), base);
  if (core::isa_supported(core::Isa::kAvx2)) {
    EXPECT_EQ(run({{"kc", 128}, {"ukernel", 2}}), base);
  }
  EXPECT_EQ(run({{"kc", 128}, {"ukernel", 1}}), base);
  // The tuned blocking is what the driver sees.
  GemmBlocking g = gemm_blocking_for(m, n, k);
  EXPECT_EQ(g.kc, 128);
  EXPECT_EQ(g.isa, core::Isa::kScalar);
}

TEST(Tuning, TunedOrReadsTheEntryOfTheCallsShapeClass) {
  TuningGuard guard;
  set_active_tuning(nullptr);
  EXPECT_EQ(tuned_or("mhc.post_fwd", {2048, 4, 512}, "block_tokens", 8), 8);
  auto t = std::make_shared<Tuning>();
  t->set("mhc.post_fwd", shape_class({2000, 4, 512}), {{"block_tokens", 64}});
  t->set("kv_compress.bwd", "*", {{"channel_block", 0}});  // 0: the built-in
  set_active_tuning(t);
  EXPECT_EQ(tuned_or("mhc.post_fwd", {2048, 4, 512}, "block_tokens", 8), 64);
  EXPECT_EQ(tuned_or("mhc.post_fwd", {4096, 4, 512}, "block_tokens", 8), 8);  // another class
  EXPECT_EQ(tuned_or("mhc.post_bwd", {2048, 4, 512}, "block_tokens", 8), 8);  // another kernel
  EXPECT_EQ(tuned_or("kv_compress.bwd", {2048, 128, 4}, "channel_block", 64), 64);
}

// Lookups read their thread's copy of the active tuning (tuning.cc thread_tuning()); a thread
// that looked one tuning up sees the next one, and no tuning again, at its next lookup, as the
// pool's long-lived workers must when the search switches configurations between calls.
TEST(Tuning, ALongLivedThreadSeesEveryNewTuning) {
  TuningGuard guard;
  auto with = [](int64_t block) {
    auto t = std::make_shared<Tuning>();
    t->set("mhc.post_fwd", "*", {{"block_tokens", block}});
    return t;
  };
  core::ThreadPool pool(2);
  auto on_workers = [&] {  // every job of one parallel region, on the pool's threads
    std::vector<int64_t> got(8, -1);
    pool.parallel_for(0, 8, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) got[size_t(i)] = tuned_or("mhc.post_fwd", {2048, 4, 512}, "block_tokens", 8);
    });
    return got;
  };
  set_active_tuning(with(32));
  EXPECT_EQ(on_workers(), std::vector<int64_t>(8, 32));
  set_active_tuning(with(64));
  EXPECT_EQ(on_workers(), std::vector<int64_t>(8, 64));
  EXPECT_EQ(tuned_params("mhc.post_fwd", "2048x4x512").at("block_tokens"), 64);
  set_active_tuning(nullptr);
  EXPECT_EQ(on_workers(), std::vector<int64_t>(8, 8));
  set_active_tuning(with(16));
  EXPECT_EQ(on_workers(), std::vector<int64_t>(8, 16));
}

// The tuner's cases at a chosen shape, for the kernels whose parameters split the work: each
// passes the gate under a tuned configuration at that shape's class.
TEST(Tuning, CasesAtAShapePassTheGateUnderTheirTuning) {
  TuningGuard guard;
  core::ThreadPool pool(2);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> at = {
      {"rope.fwd", {37, 3, 40}},          {"kv_compress.fwd", {64, 40, 4}},
      {"kv_compress.bwd", {300, 24, 128}}, {"sparse_attention.fwd", {45, 2, 24}},
      {"sparse_attention.bwd", {45, 2, 24}},
      {"mhc.pre_fwd", {19, 4, 24}},        {"mhc.pre_bwd", {19, 4, 24}},
      {"mhc.post_fwd", {19, 3, 24}},       {"mhc.post_bwd", {19, 4, 24}},
      {"mhc.head_fwd", {19, 4, 24}},       {"mhc.head_bwd", {19, 4, 40}}};
  for (const auto& [k, dims] : at) {
    auto t = std::make_shared<Tuning>();
    ParamMap p;
    for (const TunableParam& tp : params_of(k)) p[tp.name] = tp.name == std::string("block_elems") ? 256 : tp.lo;
    t->set(k, shape_class(dims), p);
    set_active_tuning(t);
    std::vector<KernelCase> cases = make_cases_at(k, dims, 3, &pool);
    ASSERT_FALSE(cases.empty()) << k;
    for (KernelCase& c : cases) {
      CheckResult r = check_case(c);
      EXPECT_TRUE(r.passed) << k << " " << c.dtype << " " << c.shape << ": " << r.message;
    }
  }
  EXPECT_THROW(make_cases_at("mhc.post_fwd", {4, 9, 8}, 1), std::invalid_argument);  // > 8 streams
  EXPECT_THROW(make_cases_at("rope.fwd", {4, 8}, 1), std::invalid_argument);
}

TEST(Tuning, NoTuningKeepsTheBuiltInBlocking) {
  TuningGuard guard;
  set_active_tuning(nullptr);
  GemmBlocking g = gemm_blocking_for(512, 512, 512);
  EXPECT_EQ(g.kc, gemm_blocking().kc);
  EXPECT_EQ(g.mc, gemm_blocking().mc);
  EXPECT_EQ(g.split, 0);
}

}  // namespace
}  // namespace trex::kernels
