// `trex plan` run as a subprocess: table, JSON, SVG; bad input gives one line and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

ProcessResult trex_run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  o.cwd = TREX_SOURCE_DIR;
  return run_process(argv, o);
}

const std::vector<std::string> kGpt = {"plan", "--model", "configs/model/gpt3-175b.toml", "--cluster",
                                       "configs/cluster/dgx-a100.toml", "--run", "configs/run/gpt3-175b-megatron.toml",
                                       "--strategy", "configs/strategy/gpt3-tp8-pp8.toml"};

TEST(PlanCommand, PrintsVerdictBreakdownAndEveryConvention) {
  ProcessResult r = trex_run(kGpt);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-> fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pipeline bubble"), std::string::npos);
  EXPECT_NE(r.out.find("TP comm (exposed)"), std::string::npos);
  // dgx-a100's 4 GB reserve has no published figure: the report says it is assumed.
  EXPECT_NE(r.out.find("reserve (assumed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reserve: an assumption of the cluster file"), std::string::npos) << r.out;
  for (const char* c : {"trex", "6n", "megatron", "dense-attn", "megatron-hfu"})
    EXPECT_NE(r.out.find(std::string("  ") + c + " "), std::string::npos) << c;
}

TEST(PlanCommand, JsonAndSvg) {
  std::string svg = (std::filesystem::temp_directory_path() / ("trex-plan-" + std::to_string(getpid()) + ".svg")).string();
  std::vector<std::string> args = kGpt;
  args.insert(args.end(), {"--json", "--nodes", "64", "--svg", svg});
  ProcessResult r = trex_run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["devices"].get<long>(), 512);
  EXPECT_EQ(j["strategy"]["dp"].get<long>(), 8);
  double step = j["time"]["step"].get<double>();
  EXPECT_GT(step, 0);
  EXPECT_NEAR(j["tokens_per_s"].get<double>() * step, 1536.0 * 2048, 1);
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  EXPECT_EQ(j["memory"]["reserved_source"].get<std::string>(), "assumption");
  EXPECT_EQ(j["strategy"]["microbatch_group"].get<long>(), 8);  // VPP 2: Megatron's default N = pp
  EXPECT_GE(j["assumptions"].size(), 5u);
  EXPECT_FALSE(j["efficiency"]["source"].get<std::string>().empty());
  std::string chart = read_file(svg);
  EXPECT_EQ(chart.rfind("<svg", 0), 0u);
  EXPECT_NE(chart.find("</svg>"), std::string::npos);
  std::filesystem::remove(svg);
}

TEST(PlanCommand, InvalidStrategyIsRefusedWithItsReason) {
  std::vector<std::string> args = kGpt;
  args.insert(args.end(), {"--nodes", "3"});  // 24 devices: tp 8 x pp 8 does not divide them
  ProcessResult r = trex_run(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trex: error: strategy.tp: tp x cp x pp = 64 does not divide the 24 devices of DGX A100 (Selene)\n");
  EXPECT_EQ(r.out, "");
}

TEST(PlanCommand, MissingFlagOrFileIsOneLine) {
  ProcessResult r = trex_run({"plan", "--model", "configs/model/gpt3-175b.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--cluster: missing"), std::string::npos) << r.err;
  std::vector<std::string> args = kGpt;
  args[2] = "configs/model/nope.toml";
  r = trex_run(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(PlanCommand, SearchPrintsRankedStrategies) {
  ProcessResult r = trex_run({"plan", "search", "--model", "configs/model/deepseek-v4-flash.toml", "--cluster",
                              "configs/cluster/cloudmatrix384.toml", "--nodes", "8", "--run", "configs/run/v4-pro-8k.toml",
                              "--top", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["top"].size(), 3u);
  EXPECT_LE(j["top"][0]["time"]["step"].get<double>(), j["top"][1]["time"]["step"].get<double>());
  EXPECT_GT(j["refused"].get<long>(), 0);
}

// --stack without --base searches from the stack's defaults (its TP overlap 0.6 here): the same
// ranking as a --base file that sets none of them.
TEST(PlanCommand, SearchWithAStackStartsFromItsDefaults) {
  const std::vector<std::string> args = {"plan", "search", "--model", "configs/model/gpt3-175b.toml", "--cluster",
                                         "configs/cluster/dgx-a100.toml", "--run", "configs/run/gpt3-175b-megatron.toml",
                                         "--stack", "configs/plan/stack/megatron-core.toml", "--top", "3", "--json"};
  std::string base = (std::filesystem::temp_directory_path() / ("trex-base-" + std::to_string(getpid()) + ".toml")).string();
  write_file_atomic(base, "[strategy]\n");
  std::vector<std::string> with_base = args;
  with_base.insert(with_base.end(), {"--base", base});
  ProcessResult plain = trex_run(args), file = trex_run(with_base);
  std::filesystem::remove(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(file.exit_code, 0) << file.err;
  nlohmann::json a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(file.out);
  ASSERT_EQ(a["top"].size(), 3u);
  EXPECT_EQ(a["top"], b["top"]);
}

TEST(PlanCommand, HtmlChartHoldsTheSvgAndATable) {
  std::string html = (std::filesystem::temp_directory_path() / ("trex-ladder-" + std::to_string(getpid()) + ".html")).string();
  ProcessResult r = trex_run({"plan", "ladder", "configs/plan/v4-pro-cm384-ladder.toml", "--svg", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string page = read_file(html);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("3 + kernel optimization"), std::string::npos);
  EXPECT_NE(page.find("</table>"), std::string::npos);
  std::filesystem::remove(html);
}

TEST(PlanCommand, LadderPrintsEveryRungBesideTheReport) {
  ProcessResult r = trex_run({"plan", "ladder", "configs/plan/v4-pro-cm384-ladder.toml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("11.67%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("34.22%"), std::string::npos);
  EXPECT_NE(r.out.find("what each rung rests on"), std::string::npos);
  EXPECT_NE(r.out.find("3 + kernel optimization"), std::string::npos);
}

TEST(PlanCommand, ValidatePrintsTheErrorTable) {
  ProcessResult r = trex_run({"plan", "validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("megatron-gpt-145.6b"), std::string::npos);
  EXPECT_NE(r.out.find("mean |error|"), std::string::npos);
  // Each split names its number of sources and its largest source's share, and adds the rows
  // without that source and with each source weighted equally (review rplan3 item 4).
  EXPECT_NE(r.out.find("112 runs from 13 sources; the largest, bigscience-workshop/bigscience, has 56 (50%)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("all but the largest source"), std::string::npos);
  EXPECT_NE(r.out.find("source-weighted (each source 1)"), std::string::npos);
  r = trex_run({"plan", "validate", "/nonexistent-dir"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace trex

namespace trex {
namespace {

// The planner on this machine: `trex hw probe` describes it, `trex plan` takes that file as a
// one-device cluster and predicts a v4-nano training step.
TEST(PlanCommand, PredictsAStepOnThisMachineFromItsProbe) {
  std::string hw = (std::filesystem::temp_directory_path() / ("trex-probe-" + std::to_string(getpid()) + ".toml")).string();
  ProcessResult probe = trex_run({"hw", "probe", "--quick", "--out", hw});
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  std::string run = hw + ".run.toml", strategy = hw + ".strategy.toml";
  write_file_atomic(run, "[run]\nseq_len = 512\nglobal_batch = 8\nmicro_batch = 2\n");
  write_file_atomic(strategy, "[strategy]\nzero = 0\n");
  ProcessResult r = trex_run({"plan", "--model", "configs/model/v4-nano.toml", "--cluster", hw, "--run", run,
                              "--strategy", strategy, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["devices"].get<long>(), 1);
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  EXPECT_EQ(j["time"]["tp_comm"].get<double>(), 0);
  EXPECT_EQ(j["time"]["bubble"].get<double>(), 0);
  EXPECT_GT(j["time"]["step"].get<double>(), 0);
  double mfu = j["mfu"]["trex"]["mfu"].get<double>();
  EXPECT_GT(mfu, 0.01);
  EXPECT_LT(mfu, 1.0);
  for (const std::string& f : {hw, run, strategy}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace trex
