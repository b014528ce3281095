// The time limit on reading: `trex solve --time-limit` is one budget for the whole command, so
// the LP and MPS readers stop when it is spent. The limits used here (1 ns) pass before the
// first clock check on any machine, so the verdicts do not depend on speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "nlohmann/json.hpp"
#include "trex/lp/lp_format.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/read_limit.h"
#include "trex/util/subprocess.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;

constexpr int kRows = 5000;  // 20,000 tokens or 10,000 lines: many clock checks

std::string many_rows_lp() {
  std::string s = "Minimize\n obj: x0\nSubject To\n";
  for (int k = 0; k < kRows; ++k) s += " c" + std::to_string(k) + ": x" + std::to_string(k) + " >= 1\n";
  return s + "End\n";
}

std::string many_rows_mps() {
  std::string s = "NAME big\nROWS\n N obj\n";
  for (int k = 0; k < kRows; ++k) s += " G c" + std::to_string(k) + "\n";
  s += "COLUMNS\n";
  for (int k = 0; k < kRows; ++k) s += " x" + std::to_string(k) + " c" + std::to_string(k) + " 1\n";
  return s + "ENDATA\n";
}

template <typename Read>
std::string stop_of(Read read) {
  try {
    read();
  } catch (const ReadTimeLimit& e) {
    return e.what();
  }
  return "";
}

TEST(ReadLimit, LpReaderStopsWhenTheLimitHasPassed) {
  std::string text = many_rows_lp();
  EXPECT_EQ(read_lp(text, "big.lp").num_rows(), kRows);  // no limit: read to the end
  EXPECT_EQ(read_lp(text, "big.lp", ReadLimit(3600)).num_rows(), kRows);
  EXPECT_THAT(stop_of([&] { read_lp(text, "big.lp", ReadLimit(1e-9)); }),
              HasSubstr("big.lp: the time limit (1e-09 s) passed while the model was read; nothing was solved"));
}

TEST(ReadLimit, MpsReaderStopsWhenTheLimitHasPassed) {
  std::string text = many_rows_mps();
  EXPECT_EQ(read_mps(text, "big.mps").num_rows(), kRows);
  EXPECT_EQ(read_mps(text, "big.mps", {}, ReadLimit(3600)).num_rows(), kRows);
  EXPECT_THAT(stop_of([&] { read_mps(text, "big.mps", {}, ReadLimit(1e-9)); }),
              HasSubstr("big.mps: the time limit (1e-09 s) passed while the model was read"));
}

// Through the binary: whether the reader stops or the read ends just after the limit, the
// command says the budget was spent before any solving (exit 0, no solution).
TEST(ReadLimit, SolveCommandReportsATimeLimitStopBeforeSolving) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("trex_read_limit_" + std::to_string(::getpid()) + ".lp")).string();
  std::ofstream(path) << many_rows_lp();
  ProcessOptions guard;
  guard.timeout_s = 600;  // a hang guard only
  ProcessResult r = run_process({TREX_BINARY, "solve", "--json", path, "--time-limit", "1e-9"}, guard);
  std::remove(path.c_str());
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "time_limit_no_solution");
  EXPECT_TRUE(j["objective"].is_null());
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("passed while the model was read; nothing was solved"));
}

}  // namespace
}  // namespace trex::lp
