// bench/kernel_triad_bench (issue 15's triad goal): --paired R times the STREAM triad beside each
// case R times and reports the median per-round ratio; without it the ratio is the case's GB/s over
// the one triad (probed or given). A bad --paired is one line and exit 2, with nothing on stdout.
// The real runs take the cast case (one 32M-element fp32 output) for about a second of CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

#ifdef TREX_KERNEL_TRIAD_BENCH
const std::string kBench = TREX_KERNEL_TRIAD_BENCH;
#else
const std::string kBench;
#endif

ProcessResult bench(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "TREX_THREADS=2", kBench};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  return run_process(argv, o);
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> r;
  size_t at = 0;
  while ((at = out.find("\njson ", at)) != std::string::npos) {
    const size_t end = out.find('\n', at + 1);
    r.push_back(nlohmann::json::parse(out.substr(at + 6, end - at - 6)));
    at = end;
  }
  return r;
}

void expect_one_line_error(const ProcessResult& p, const std::string& needle) {
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
  EXPECT_NE(p.err.find("kernel_triad_bench: " + needle), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

TEST(KernelTriadBench, BadPairedRoundsAreOneLineAndExitTwo) {
  if (kBench.empty()) GTEST_SKIP() << "kernel_triad_bench not built (TREX_BUILD_BENCH off)";
  expect_one_line_error(bench({"--paired", "2.5", "cast.bf16_to_fp32"}),
                        "--paired must be a whole number of rounds <= 1000, got '2.5'");
  expect_one_line_error(bench({"--paired", "1001", "cast.bf16_to_fp32"}),
                        "--paired must be a whole number of rounds <= 1000, got '1001'");
  expect_one_line_error(bench({"--paired", "0", "cast.bf16_to_fp32"}), "--paired must be finite and > 0, got '0'");
  expect_one_line_error(bench({"cast.bf16_to_fp32", "--paired"}), "--paired needs a value");
  expect_one_line_error(bench({"--ref-gbs", "-3", "cast.bf16_to_fp32"}), "--ref-gbs must be finite and > 0, got '-3'");
  expect_one_line_error(bench({"cast.bf16_to_fp32", "--ref-gbs"}), "--ref-gbs needs a value");
  // A trailing unit or a word is refused, not read as its numeric prefix (or as 0).
  expect_one_line_error(bench({"--ref-gbs", "51.6x", "cast.bf16_to_fp32"}),
                        "--ref-gbs must be a number, got '51.6x'");
  expect_one_line_error(bench({"--triad", "fast", "--peak", "100", "cast.bf16_to_fp32"}),
                        "--triad must be a number, got 'fast'");
  expect_one_line_error(bench({"--ref-gbs", "inf", "cast.bf16_to_fp32"}),
                        "--ref-gbs must be finite and > 0, got 'inf'");
}

TEST(KernelTriadBench, PairedRatioIsTheMedianOverRoundsAndUnpairedUsesTheGivenTriad) {
  if (kBench.empty()) GTEST_SKIP() << "kernel_triad_bench not built (TREX_BUILD_BENCH off)";
  // A given triad of 1,000,000 GB/s: a ratio taken against it would be ~1e-5, far under the 0.01
  // the paired ratio is checked against below.
  const std::vector<std::string> common = {"--triad", "1000000", "--peak", "300", "--min-time", "0.01"};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--paired", "3", "cast.bf16_to_fp32"});
  const ProcessResult paired = bench(args);
  ASSERT_EQ(paired.exit_code, 0) << paired.err;
  std::vector<nlohmann::json> js = json_lines(paired.out);
  ASSERT_EQ(js.size(), 1u) << paired.out;
  const nlohmann::json& j = js[0];
  EXPECT_EQ(j["kernel"], "cast.bf16_to_fp32");
  EXPECT_EQ(j["paired_rounds"], 3);
  // Each round times the case at least 5 times.
  EXPECT_GE(j["runs"].get<int>(), 15);
  // The triad reported is the rounds' own (no machine triads 1000 GB/s), and the ratio is a
  // fraction of it, not of the 1000 given.
  const double triad = j["triad"], of = j["of_triad"];
  EXPECT_GT(triad, 0);
  EXPECT_LT(triad, 1000e9);
  EXPECT_GT(of, 0.01) << "a ratio against the given 1,000,000 GB/s would be about 1e-5";
  // The table's column is the same median ratio.
  char cell[32];
  std::snprintf(cell, sizeof cell, "| %.0f%% |", 100 * of);
  EXPECT_NE(paired.out.find(cell), std::string::npos) << cell << "\n" << paired.out;

  args = common;
  args.push_back("cast.bf16_to_fp32");
  const ProcessResult plain = bench(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  js = json_lines(plain.out);
  ASSERT_EQ(js.size(), 1u) << plain.out;
  EXPECT_EQ(js[0]["paired_rounds"], 0);
  EXPECT_EQ(js[0]["triad"].get<double>(), 1e15);
  const double want = js[0]["bytes"].get<double>() / js[0]["seconds"].get<double>() / 1e15;
  EXPECT_NEAR(js[0]["of_triad"].get<double>(), want, 1e-4 * want);
  // Without --ref-gbs the reference is the given triad, so of_ref is the unpaired ratio.
  EXPECT_EQ(js[0]["ref"].get<double>(), 1e15);
  EXPECT_NEAR(js[0]["of_ref"].get<double>(), want, 1e-4 * want);
}

// --ref-gbs G: of_ref is the case's GB/s over G (a fixed figure), in the JSON and the table's
// "of ref" column, beside the paired ratio, which stays against the rounds' own triads.
TEST(KernelTriadBench, RefGbsIsAFixedDenominatorBesideThePairedRatio) {
  if (kBench.empty()) GTEST_SKIP() << "kernel_triad_bench not built (TREX_BUILD_BENCH off)";
  const ProcessResult p = bench({"--triad", "1000000", "--peak", "300", "--min-time", "0.01",
                                 "--paired", "1", "--ref-gbs", "10", "cast.bf16_to_fp32"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("ref: 10.00 GB/s (--ref-gbs)"), std::string::npos) << p.out;
  const std::vector<nlohmann::json> js = json_lines(p.out);
  ASSERT_EQ(js.size(), 1u) << p.out;
  const double gbs = js[0]["bytes"].get<double>() / js[0]["seconds"].get<double>();
  EXPECT_EQ(js[0]["ref"].get<double>(), 10e9);
  const double of_ref = js[0]["of_ref"];
  EXPECT_NEAR(of_ref, gbs / 10e9, 1e-4 * gbs / 10e9);
  // The paired ratio is still against the round's own triad, neither the given 1,000,000 GB/s
  // nor the reference.
  const double triad = js[0]["triad"];
  EXPECT_LT(triad, 1000e9);
  EXPECT_NEAR(js[0]["of_triad"].get<double>(), gbs / triad, 1e-3 * gbs / triad);
  char cell[48];
  std::snprintf(cell, sizeof cell, "| %.0f%% |", 100 * of_ref);
  EXPECT_NE(p.out.find(cell), std::string::npos) << cell << "\n" << p.out;
}

}  // namespace
}  // namespace trex
