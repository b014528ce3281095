// bench/aura_attention_ab_bench: a small real run alternates the arms, reports every (kernel,
// ratio) case and each kernel's sum with ratios that are the pairs' built-in / tuned times, and
// bad arguments are one line naming the argument, exit 2, nothing on stdout. No timing is
// asserted beyond "positive".
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

#ifdef TREX_AURA_ATTENTION_AB_BENCH
const std::string kBench = TREX_AURA_ATTENTION_AB_BENCH;
#else
const std::string kBench;
#endif

ProcessResult bench(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kBench};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  return run_process(argv, o);
}

TEST(AuraAttentionAbBench, ReportsEveryLayerAndTheSumAsPairRatios) {
  if (kBench.empty()) GTEST_SKIP() << "aura_attention_ab_bench not built (TREX_BUILD_BENCH off)";
  const ProcessResult p = bench({"--threads", "2", "--pairs", "5", "--min-time", "0.001", "--tokens", "300",
                                 "--heads", "2", "--head-dim", "24", "--bwd", "chunks=3", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j.at("shape_class").get<std::string>(), "512x2x32");
  EXPECT_EQ(j.at("bwd").at("chunks").get<int>(), 3);
  ASSERT_EQ(j.at("cases").size(), 3u);  // the backward at ratio 0, 4, 128 (fp32); no forward entry
  std::vector<double> sum_b(5, 0), sum_t(5, 0);
  for (const nlohmann::json& c : j.at("cases")) {
    EXPECT_EQ(c.at("kernel").get<std::string>(), "sparse_attention.bwd");
    const auto r = c.at("pair_ratios").get<std::vector<double>>();
    ASSERT_EQ(r.size(), 5u);
    EXPECT_GT(c.at("builtin_ms").get<double>(), 0);
    EXPECT_GT(c.at("tuned_ms").get<double>(), 0);
    std::vector<double> s = r;
    std::sort(s.begin(), s.end());
    EXPECT_DOUBLE_EQ(c.at("median_pair_ratio").get<double>(), s[2]);
  }
  ASSERT_EQ(j.at("sums").size(), 1u);
  EXPECT_EQ(j.at("sums")[0].at("ratios").get<std::vector<int>>(), (std::vector<int>{0, 4, 128}));
  EXPECT_EQ(j.at("sums")[0].at("pair_ratios").size(), 5u);
}

TEST(AuraAttentionAbBench, BadArgumentsAreOneLineExitTwo) {
  if (kBench.empty()) GTEST_SKIP() << "aura_attention_ab_bench not built (TREX_BUILD_BENCH off)";
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--bwd", "chunks=17"}, "--bwd"},                  // outside the kernel's 1..16
      {{"--bwd", "chunks"}, "--bwd"},                     // not NAME=VALUE
      {{"--fwd", "chunks=2"}, "--fwd"},                   // not a forward parameter
      {{"--bwd", "chunks=2", "--pairs", "4"}, "--pairs"}, // fewer than 5 pairs
      {{"--bwd", "chunks=2", "--ratios", "0,16"}, "--ratios"},
      {{"--bwd", "chunks=2", "--min-time", "0"}, "--min-time"},
      {{"--bwd", "chunks=2", "--speed"}, "--speed"},
      {{"--threads", "2"}, "--fwd or --bwd"}};            // nothing to compare
  for (const auto& [args, needle] : bad) {
    const ProcessResult p = bench(args);
    EXPECT_EQ(p.exit_code, 2) << needle << ": " << p.err;
    EXPECT_TRUE(p.out.empty()) << p.out;
    EXPECT_EQ(p.err.rfind("aura_attention_ab_bench: " + needle, 0), 0u) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
  }
}

}  // namespace
}  // namespace trex
