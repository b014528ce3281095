// `trex solve --time-limit S` keeps its budget even when the solver does not watch the clock
// (CLP's presolve on GLPK's huge.mod ran minutes past 60 s): apps/trex/solve_command.cc's
// watchdog prints the time-limit verdict once and ends the process. The solver's stall is the
// test hook TREX_TEST_SOLVER_STALL_S; the verdicts, not the times, are checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SolveWatchdog : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = (fs::temp_directory_path() / ("trex_watchdog_" + std::to_string(::getpid()) + ".lp")).string();
    std::ofstream(model_) << "Minimize\n obj: x + 2 y\nSubject To\n c1: x + y >= 1\nEnd\n";
  }
  void TearDown() override { fs::remove(model_); }
  // trex solve --json on the model, the solver stalled `stall` seconds first.
  ProcessResult solve(const std::string& stall, const std::string& limit) {
    ProcessOptions options;
    options.timeout_s = 120;  // a hang guard only
    return run_process({"env", "TREX_TEST_SOLVER_STALL_S=" + stall, TREX_BINARY, "solve", "--json",
                        "--time-limit", limit, model_},
                       options);
  }
  std::string model_;
};

// The stall (100 s) outlasts the budget (0.2 s) and its grace by far, and the hang guard too:
// only the watchdog can end the run, with the time-limit verdict and one JSON line.
TEST_F(SolveWatchdog, ASolverPastTheBudgetIsEndedWithTheTimeLimitVerdict) {
  ProcessResult r = solve("100", "0.2");
  ASSERT_FALSE(r.timed_out) << "the watchdog did not end the run";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "time_limit_no_solution");
  EXPECT_TRUE(j["objective"].is_null());
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("did not stop at the time limit"));
  EXPECT_EQ(r.err, "");
}

// A solver that answers within the budget keeps its answer; the watchdog stays silent.
TEST_F(SolveWatchdog, AnAnswerWithinTheBudgetIsPrintedOnce) {
  ProcessResult r = solve("0", "60");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "optimal");
  EXPECT_EQ(j["objective"], 1.0);
}

}  // namespace
}  // namespace trex::cli
