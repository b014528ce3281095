// bench/aura_gemm_call_cost.py, the fit behind the GEMM model's per-call cost (target.cc,
// docs/aura.md "GEMM model"), run on a table built from a known per-call cost: it recovers that
// cost, takes 6 x 16's FMA rate from the table rather than the probe, and answers bad input
// with one line and exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "trex/util/subprocess.h"

namespace trex {
namespace {

const std::string kScript = std::string(TREX_SOURCE_DIR) + "/bench/aura_gemm_call_cost.py";

std::string dir() {
  auto d = std::filesystem::temp_directory_path() / ("trex_aura_call_cost_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

ProcessResult run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"python3", kScript};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 60;
  return run_process(argv, o);
}

void expect_one_line_error(const ProcessResult& p, const std::string& needle) {
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
  EXPECT_NE(p.err.find("aura_gemm_call_cost.py: " + needle), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

// One space, k = 512, FMA rate 1e11 for 12 x 32. A 12 x 32 tile takes 512 x 2 x 12 x 32 / 1e11 =
// 3.932 us of FMAs plus 35 ns a call (8 calls at kc 64, one at kc 512); 6 x 16 has four times
// the tiles at the same FMA rate and 8 ns a call, so its kc 512 time is 1.0008 of 12 x 32's: the
// table's rate for it is 1.001 of 12 x 32's, and the fit gives 35 and 8 / 1.0008 ns, 1.45 ns a
// line by least squares through zero: (24 x 35 + 6 x 7.994) / (24^2 + 6^2).
std::string gemm_table(double slow2) {
  const double fma3 = 512 * 2.0 * 12 * 32 / 1e11, fma2 = 512 * 2.0 * 6 * 16 / 1e11;
  std::string table = "# a table built from known call costs\n";
  auto row = [&](int kc, int uk, double t) {
    char line[256];
    std::snprintf(line, sizeof line, "gemm 120x256x512 kc=%d;mc=120;nc=256;split=1;ukernel=%d 1 %.12g %.12g %.12g %.12g\n",
                  kc, uk, t, t, t, t);
    table += line;
  };
  row(64, 3, 1000 * (fma3 + 8 * 35e-9));
  row(512, 3, 1000 * (fma3 + 35e-9));
  row(64, 2, slow2 * 4000 * (fma2 + 8 * 8e-9));
  row(512, 2, slow2 * 4000 * (fma2 + 8e-9));
  return table;
}

TEST(GemmCallCostScript, RecoversAKnownCallCostAtTheTablesOwnRates) {
  if (!program_available("python3")) GTEST_SKIP() << "python3 not in PATH";
  ProcessResult p = run({write("known.tsv", gemm_table(1)) + ":1e11"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("120x256x512 ukernel 3 (rate 1.000 of 12 x 32's) against kc 512, ns a call: kc 64: 35\n"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("120x256x512 ukernel 2 (rate 1.001 of 12 x 32's) against kc 512, ns a call: kc 64: 8\n"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("ukernel 3 (12 x 32, 24 lines): median over kc 64 and 128 of every space: 35.0 ns"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("per line, no fixed part (least squares over the kc 64/128 medians): 1.45 ns"),
            std::string::npos)
      << p.out;
  // The rate is the table's, not the probe's: 6 x 16 made twice as slow reads as rate 0.500, and
  // its FMA steps twice as long give twice the call time for the same ratios.
  ProcessResult q = run({write("slow.tsv", gemm_table(2)) + ":1e11"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("120x256x512 ukernel 2 (rate 0.500 of 12 x 32's) against kc 512, ns a call: kc 64: 16\n"),
            std::string::npos)
      << q.out;
  std::filesystem::remove_all(dir());
}

TEST(GemmCallCostScript, BadInputIsOneLineAndExitTwo) {
  if (!program_available("python3")) GTEST_SKIP() << "python3 not in PATH";
  const std::string missing = dir() + "/missing.tsv";
  std::filesystem::remove(missing);
  expect_one_line_error(run({missing + ":1e11"}), missing + ": No such file or directory");
  const std::string good = write("good.tsv", "gemm 120x256x512 kc=64;ukernel=3 1 0.001 0.001\n");
  expect_one_line_error(run({good}), good + ": expected TABLE:FLOPS_AVX512");
  expect_one_line_error(run({good + ":-1"}), good + ":-1: expected TABLE:FLOPS_AVX512");
  const std::string bad = write("bad.tsv", "# header\ngemm 120x256x512 kc=64;ukernel=3 1 0.001 abc\n");
  expect_one_line_error(run({bad + ":1e11"}), bad + ":2: malformed gemm row");
  const std::string ragged =
      write("ragged.tsv", "gemm 120x256x512 kc=64;ukernel=3 1 0.001 0.001 0.001\ngemm 120x256x512 kc=512;ukernel=3 1 0.001 0.001\n");
  expect_one_line_error(run({ragged + ":1e11"}), ragged + ": space gemm 120x256x512: rows with different numbers of passes");
  ProcessResult none = run({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(none.out.empty());
  std::filesystem::remove_all(dir());
}

}  // namespace
}  // namespace trex
