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
