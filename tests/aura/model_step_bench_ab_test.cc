// bench/model_step_bench --tuning-ab (session 18): tuned against untuned in one process. A small
// real run alternates the arms pair by pair in the documented order, reports both arms and the
// per-pair ratios, and trains exactly as the plain run does (the tuning here keeps the bits, so
// the losses match step for step); bad input (a corrupt or missing tuning file, --trace beside
// it) is one line and exit 2, with nothing on stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

#ifdef TREX_MODEL_STEP_BENCH
const std::string kBench = TREX_MODEL_STEP_BENCH;
#else
const std::string kBench;
#endif
const std::string kConfig = std::string(TREX_SOURCE_DIR) + "/configs/model/v4-nano.toml";

std::string dir() {
  auto d = std::filesystem::temp_directory_path() / ("trex_step_ab_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

ProcessResult bench(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "TREX_THREADS=2", kBench, kConfig};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  return run_process(argv, o);
}

void expect_one_line_error(const ProcessResult& p, const std::string& needle) {
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
  EXPECT_NE(p.err.find("model_step_bench: " + needle), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

// Entries that only move work between threads and keep the bits (docs/aura.md, "Correctness under
// any legal configuration"), so a tuned step computes what an untuned one does.
const char* kTuning = R"([hardware]
name = "test"
features = "avx512"

[[kernel]]
name = "sparse_attention.fwd"
shape = "*"
query_block = 16

[[kernel]]
name = "cross_entropy"
shape = "*"
block_elems = 262144

[[kernel]]
name = "swiglu.fwd"
shape = "*"
block_elems = 4096
)";

TEST(ModelStepBenchAb, AlternatesTheArmsAndTrainsAsThePlainRun) {
  if (kBench.empty()) GTEST_SKIP() << "model_step_bench not built (TREX_BUILD_BENCH off)";
  const std::string tuning = write("tuning.toml", kTuning);
  ProcessResult ab = bench({"--seq", "256", "--steps", "2", "--warmup", "0", "--tuning-ab", tuning});
  ASSERT_EQ(ab.exit_code, 0) << ab.err;
  const nlohmann::json j = nlohmann::json::parse(ab.out);
  // Pair 0 untuned then tuned, pair 1 tuned then untuned.
  EXPECT_EQ(j.at("tuned_steps").get<std::vector<bool>>(), (std::vector<bool>{false, true, true, false}));
  const auto un = j.at("untuned_step_s").get<std::vector<double>>(), tu = j.at("tuned_step_s").get<std::vector<double>>();
  const auto steps = j.at("step_times_s").get<std::vector<double>>();
  ASSERT_EQ(un.size(), 2u);
  ASSERT_EQ(tu.size(), 2u);
  EXPECT_EQ(un, (std::vector<double>{steps[0], steps[3]}));
  EXPECT_EQ(tu, (std::vector<double>{steps[1], steps[2]}));
  const auto ratios = j.at("pair_ratios").get<std::vector<double>>();
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_DOUBLE_EQ(ratios[0], un[0] / tu[0]);
  EXPECT_DOUBLE_EQ(ratios[1], un[1] / tu[1]);
  EXPECT_DOUBLE_EQ(j.at("median_pair_ratio").get<double>(), 0.5 * (ratios[0] + ratios[1]));
  EXPECT_EQ(j.at("tuned_faster_pairs").get<long>(), long(tu[0] < un[0]) + long(tu[1] < un[1]));
  EXPECT_EQ(j.at("untuned_forward_backward_cpu_s").size(), 2u);
  EXPECT_EQ(j.at("tuned_forward_backward_cpu_s").size(), 2u);
  EXPECT_EQ(j.at("tuning_ab").get<std::string>(), tuning);

  // The same four steps without the tuning: the same losses, bit for bit.
  ProcessResult plain = bench({"--seq", "256", "--steps", "4", "--warmup", "0"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p.contains("tuning_ab"));
  EXPECT_EQ(j.at("losses").get<std::vector<double>>(), p.at("losses").get<std::vector<double>>());
}

TEST(ModelStepBenchAb, BadInputIsOneLineAndExit2) {
  if (kBench.empty()) GTEST_SKIP() << "model_step_bench not built (TREX_BUILD_BENCH off)";
  const std::string corrupt = write("corrupt.toml", "[hardware\nname = 1\n");
  expect_one_line_error(bench({"--steps", "1", "--tuning-ab", corrupt}), corrupt + ":1:");
  const std::string missing = dir() + "/missing.toml";
  expect_one_line_error(bench({"--steps", "1", "--tuning-ab", missing}), missing);
  const std::string unknown = write("unknown.toml", "[[kernel]]\nname = \"gemm\"\nshape = \"*\"\nbogus = 3\n");
  expect_one_line_error(bench({"--steps", "1", "--tuning-ab", unknown}), unknown + ":");
  const std::string trace = dir() + "/trace.json";
  expect_one_line_error(bench({"--steps", "1", "--trace", trace, "--tuning-ab", unknown}), "--tuning-ab: not with --trace");
  EXPECT_FALSE(std::filesystem::exists(trace));
}

}  // namespace
}  // namespace trex
