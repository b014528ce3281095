// `trex kernels check|bench|list` run as the real binary: a passing check table, JSON from
// bench with every figure the issue asks for, and one-line errors (exit 2) for bad flags.
#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

ProcessOptions limit(double s) {
  ProcessOptions o;
  o.timeout_s = s;
  return o;
}

TEST(KernelsCommand, CheckPrintsAPassingTable) {
  ProcessResult p = run_process({TREX_BINARY, "kernels", "check", "--kernel", "rmsnorm.fwd",
                                 "--kernel", "mhc.pre_bwd", "--seeds", "2"}, limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("mhc.pre_bwd"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("24 of 24 cases passed"), std::string::npos) << p.out;
}

TEST(KernelsCommand, CheckJson) {
  ProcessResult p = run_process({TREX_BINARY, "kernels", "check", "--json", "--kernel", "indexer.kl_bwd"}, limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["cases"], 9);
  EXPECT_EQ(j["kernels"][0]["kernel"], "indexer.kl_bwd");
  EXPECT_TRUE(j["kernels"][0]["inputs_unchanged"].get<bool>());
}

TEST(KernelsCommand, BenchJsonHasEveryFigure) {
  ProcessResult p = run_process({TREX_BINARY, "kernels", "bench", "--quick", "--json", "--min-time",
                                 "0.01", "--kernel", "swiglu.bwd", "--kernel", "kv_compress.fwd"},
                                limit(300));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_GT(j["context"]["triad_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(j["context"]["peak_flops_fp32"].get<double>(), 0);
  ASSERT_EQ(j["results"].size(), 4u);  // fp32 and bf16 SwiGLU, ratio 4 and 128 compressor
  for (const auto& r : j["results"]) {
    EXPECT_TRUE(r["valid"].get<bool>()) << r.dump();
    for (const char* k : {"fused_seconds", "reference_seconds", "speedup", "gb_per_s", "roofline_percent"})
      EXPECT_GT(r[k].get<double>(), 0) << k << " " << r.dump();
  }
}

TEST(KernelsCommand, BenchComparesGemmWithOpenBlas) {
  ProcessResult p = run_process({TREX_BINARY, "kernels", "bench", "--quick", "--json", "--min-time",
                                 "0.01", "--kernel", "gemm"}, limit(300));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  ASSERT_EQ(j["gemm_vs_openblas"].size(), 2u) << p.out;  // OpenBLAS is a build dependency
  for (const auto& g : j["gemm_vs_openblas"]) {
    EXPECT_TRUE(g["agree"].get<bool>()) << g.dump();
    EXPECT_GT(g["trex_over_openblas"].get<double>(), 0) << g.dump();
  }
}

TEST(KernelsCommand, ListNamesEveryKernel) {
  ProcessResult p = run_process({TREX_BINARY, "kernels", "list"}, limit(60));
  ASSERT_EQ(p.exit_code, 0);
  for (const char* k : {"gemm", "sparse_attention.bwd", "mhc.post_fwd", "cross_entropy", "adamw"})
    EXPECT_NE(p.out.find(k), std::string::npos) << k;
}

TEST(KernelsCommand, BadInputIsOneLineAndExit2) {
  ProcessResult a = run_process({TREX_BINARY, "kernels", "check", "--kernel", "no_such"}, limit(60));
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("--kernel"), std::string::npos) << a.err;
  EXPECT_EQ(a.err.find('\n'), a.err.size() - 1) << a.err;
  ProcessResult b = run_process({TREX_BINARY, "kernels", "bench", "--quick", "--hw",
                                 std::string(TREX_SOURCE_DIR) + "/configs/hw/h200.toml"}, limit(60));
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("device.kind"), std::string::npos) << b.err;
  ProcessResult c = run_process({TREX_BINARY, "kernels", "check", "--seeds", "0"}, limit(60));
  EXPECT_EQ(c.exit_code, 2);
  ProcessResult d = run_process({TREX_BINARY, "kernels", "bench", "--hw", "/nonexistent.toml"}, limit(60));
  EXPECT_EQ(d.exit_code, 2);
}

}  // namespace
}  // namespace trex
