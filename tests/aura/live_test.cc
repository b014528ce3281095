// The live evaluator (live.h) on a small real kernel: a candidate that passes the gate is timed
// by the statistic asked for (the message names it; auto is the fastest on one thread), a configuration the kernel refuses is
// recorded as failed and never timed, and a timing statistic other than median or min is a
// one-line input error naming the field. No timing is asserted beyond "positive".
#include "trex/aura/live.h"

#include <gtest/gtest.h>

#include <string>

#include "trex/aura/hardware.h"
#include "trex/aura/target.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"
#include "trex/util/error.h"

namespace trex::aura {
namespace {

AuraHardware small_machine() {
  AuraHardware h;
  h.name = "test";
  h.isa = "avx2";
  h.threads = 1;
  h.l1_bytes = 32 << 10;
  h.l2_bytes = 512 << 10;
  h.l3_bytes = 32 << 20;
  h.peak_flops = 100e9;
  h.bw_mem = 20e9;
  return h;
}

TEST(LiveEvaluator, TimesByTheStatisticAskedForAfterTheGate) {
  core::ThreadPool pool(1);  // one thread: the thread's CPU time
  const TuneTarget t = make_target("rmsnorm.fwd", {64, 256}, small_machine());
  const Config c = builtin_config(t, small_machine());
  // auto: the fastest on one thread's CPU clock.
  for (Timing timing : {Timing::kMedian, Timing::kMinimum, Timing::kAuto}) {
    LiveEvaluator eval(t, &pool, 0.001, timing);
    const Measurement m = eval(c);
    ASSERT_TRUE(m.passed) << m.message;
    EXPECT_GT(m.seconds, 0);
    const std::string want = timing == Timing::kMedian ? "median of " : "fastest of ";
    EXPECT_EQ(m.message.rfind(want, 0), 0u) << m.message;
    EXPECT_NE(m.message.find("thread CPU time"), std::string::npos) << m.message;
    EXPECT_EQ(eval.evaluations(), 1);
  }
}

TEST(LiveEvaluator, AnIllegalValueFailsWithoutTiming) {
  core::ThreadPool pool(1);
  const TuneTarget t = make_target("rmsnorm.fwd", {64, 256}, small_machine());
  Config c = builtin_config(t, small_machine());
  c["block_elems"] = 3;  // not a legal block: the kernels' check_param refuses it
  LiveEvaluator eval(t, &pool, 0.001, Timing::kMinimum);
  const Measurement m = eval(c);
  EXPECT_FALSE(m.passed);
  EXPECT_EQ(m.seconds, 0);
  EXPECT_NE(m.message.find("illegal"), std::string::npos) << m.message;
}

// Sparse attention's timed case is the layer the shape names: ratio 0 (the window only) and 128
// (every visible entry) as well as the default 4 (top-k of the ratio-4 entries). Each passes the
// gate (poisoned outputs, the eager reference, inputs unchanged, a second run bit-identical) at
// the chunk counts' edges, under the entry the kernels look up by tokens, heads and head_dim.
TEST(LiveEvaluator, SparseAttentionTimesTheLayerItsRatioNames) {
  core::ThreadPool pool(2);
  AuraHardware hw = small_machine();
  hw.threads = 2;
  for (int64_t ratio : {0, 4, 128}) {
    for (const char* kernel : {"sparse_attention.fwd", "sparse_attention.bwd"}) {
      const TuneTarget t = make_target(kernel, {300, 2, 24, ratio}, hw);
      std::vector<kernels::KernelCase> cases = kernels::make_cases_at(kernel, t.dims, 1, &pool);
      ASSERT_EQ(cases.size(), 2u);  // fp32, bf16
      const std::string& shape = cases[0].shape;
      EXPECT_EQ(shape.find("top-") != std::string::npos, ratio == 4) << shape;
      EXPECT_EQ(shape.find("ratio 128") != std::string::npos, ratio == 128) << shape;
      LiveEvaluator eval(t, &pool, 0.0005, Timing::kMedian);
      for (const Config& c : {builtin_config(t, hw), t.config_at(std::vector<int>(t.space.size(), 0))}) {
        const Measurement m = eval(c);
        EXPECT_TRUE(m.passed) << kernel << " ratio " << ratio << ": " << m.message;
        EXPECT_GT(m.seconds, 0);
      }
    }
  }
  EXPECT_THROW(kernels::make_cases_at("sparse_attention.fwd", {300, 2, 24, 16}, 1), std::invalid_argument);
  EXPECT_THROW(kernels::make_cases_at("sparse_attention.fwd", {300, 2, 24, 4, 4}, 1), std::invalid_argument);
}

TEST(LiveEvaluator, TimingStatisticsParseAndBadOnesNameTheField) {
  EXPECT_EQ(parse_timing("median", "--timing"), Timing::kMedian);
  EXPECT_EQ(parse_timing("min", "--timing"), Timing::kMinimum);
  EXPECT_EQ(parse_timing("auto", "--timing"), Timing::kAuto);
  EXPECT_STREQ(to_string(Timing::kAuto), "auto");
  EXPECT_STREQ(to_string(Timing::kMinimum), "min");
  EXPECT_STREQ(to_string(Timing::kMedian), "median");
  try {
    parse_timing("mean", "--timing");
    FAIL() << "mean accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--timing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mean"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trex::aura
