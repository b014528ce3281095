// Models a program built are solved in the forked helper: right answers come back, and a load
// that hangs, throws, crashes or eats memory costs the evaluator nothing past the deadline.
#include "trex/oreval/solve_helper.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <vector>

namespace trex::oreval {
namespace {

lp::Model small_milp() {
  lp::Model m;
  m.sense = lp::Sense::kMaximize;
  int x = m.add_var("x", 0, 4, lp::VarType::kInteger, 3);
  int y = m.add_var("y", 0, 4, lp::VarType::kInteger, 2);
  m.add_row("c", {{x, 1}, {y, 1}}, -lp::kInf, 5);
  return m;
}

TEST(SolveHelper, SolvesAndReportsTheSolution) {
  HelperLimits l;
  l.seconds_left = 30;
  lp::SolveResult r = solve_in_helper(small_milp, "auto", l);
  ASSERT_EQ(r.status, lp::SolveStatus::kOptimal) << r.message;
  EXPECT_DOUBLE_EQ(r.objective, 14);
  ASSERT_EQ(r.x.size(), 2u);
  EXPECT_DOUBLE_EQ(r.x[0], 4);
  EXPECT_DOUBLE_EQ(r.x[1], 1);
}

TEST(SolveHelper, HangingLoadEndsAtTheDeadline) {
  HelperLimits l;
  l.seconds_left = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  lp::SolveResult r = solve_in_helper(
      []() -> lp::Model {
        while (true) pause();
      },
      "auto", l);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, lp::SolveStatus::kTimeLimitNoSolution) << r.message;
  // The load never ends: ending at all proves the deadline; the bound leaves a loaded CI
  // machine room to reap the helper.
  EXPECT_LT(seconds, 10.5);
}

TEST(SolveHelper, LoadErrorsCrashesAndMemoryBecomeErrors) {
  HelperLimits l;
  l.seconds_left = 30;
  l.memory_bytes = size_t(64) << 20;
  lp::SolveResult thrown = solve_in_helper([]() -> lp::Model { throw std::runtime_error("__trex_solve.json: bad"); }, "auto", l);
  EXPECT_EQ(thrown.status, lp::SolveStatus::kError);
  EXPECT_EQ(thrown.message, "__trex_solve.json: bad");
  lp::SolveResult crashed = solve_in_helper([]() -> lp::Model { raise(SIGSEGV); return {}; }, "auto", l);
  EXPECT_EQ(crashed.status, lp::SolveStatus::kError);
  EXPECT_NE(crashed.message.find("killed"), std::string::npos) << crashed.message;
  lp::SolveResult hog = solve_in_helper(
      []() -> lp::Model {
        std::vector<std::vector<char>> blocks;
        while (true) blocks.emplace_back(size_t(16) << 20, 'x');
      },
      "auto", l);
  EXPECT_EQ(hog.status, lp::SolveStatus::kError);
  EXPECT_NE(hog.message.find("out of memory"), std::string::npos) << hog.message;
}

TEST(SolveHelper, NoTimeLeftSolvesNothing) {
  HelperLimits l;
  l.seconds_left = 0;
  lp::SolveResult r = solve_in_helper(small_milp, "auto", l);
  EXPECT_EQ(r.status, lp::SolveStatus::kTimeLimitNoSolution);
}

}  // namespace
}  // namespace trex::oreval
