// GNU MathProg through glpsol: the objective sense survives, data files are used, and errors
// name the file and line. Skipped (with the reason) where glpsol is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nlohmann/json.hpp"

#include "trex/lp/mathprog.h"
#include "trex/lp/model_file.h"
#include "trex/lp/solver.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;

std::string path(const std::string& name) { return std::string(TREX_SOURCE_DIR) + "/tests/lp/files/" + name; }

std::string error_of(const std::string& mod, const std::vector<std::string>& data) {
  try {
    read_mathprog(mod, data);
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos);
    return what;
  }
  return "";
}

TEST(MathProg, ModelWithDataKeepsSenseAndIntegers) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  ReadOptions options;
  options.data_files = {path("production.dat")};
  Model m = read_model_file(path("production.mod"), options);
  EXPECT_EQ(m.sense, Sense::kMaximize);
  EXPECT_EQ(m.num_integer_vars(), 2);
  SolveResult r = make_solver("cbc")->solve(m, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_NEAR(r.objective, 2300, 1e-9);
}

TEST(MathProg, SyntaxErrorIsGlpsolsMessageWithFileAndLine) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  std::string msg = error_of(path("syntax_error.mod"), {});
  EXPECT_THAT(msg, HasSubstr("syntax_error.mod:3: syntax error"));
}

TEST(MathProg, MissingDataFileIsNamed) {
  std::string msg = error_of(path("production.mod"), {path("no_such.dat")});
  EXPECT_THAT(msg, HasSubstr("no_such.dat: data file not found"));
  // Without the data glpsol reports the first use of a missing value.
  if (program_available("glpsol")) {
    EXPECT_THAT(error_of(path("production.mod"), {}), HasSubstr("production.mod:"));
  }
}

TEST(MathProg, MissingGlpsolIsSaidClearly) {
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent", 1);
  std::string msg = error_of(path("production.mod"), {path("production.dat")});
  setenv("PATH", saved.c_str(), 1);
  EXPECT_THAT(msg, HasSubstr("glpsol, which is not installed"));
}

TEST(MathProg, DataFilesOnlyGoWithMathProg) {
  ReadOptions options;
  options.data_files = {path("production.dat")};
  EXPECT_THROW(read_model_file(path("sos.mps"), options), InputError);
}

TEST(MathProg, ObjectiveConstantIsKept) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  Model m = read_mathprog(path("objective_constant.mod"));
  EXPECT_EQ(m.objective_constant, 12.5);
  SolveResult r = make_solver("cbc")->solve(m, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_NEAR(r.objective, 16.5, 1e-9);  // glpsol's optimum; 4 without the constant
}

TEST(MathProg, DisplayOnlyModelIsTheEmptyModel) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  Model m = read_mathprog(path("display_only.mod"));
  EXPECT_EQ(m.num_vars(), 0);
  EXPECT_EQ(m.num_rows(), 0);
  SolveResult r = make_solver("cbc")->solve(m, SolveOptions{});
  ASSERT_EQ(r.status, SolveStatus::kOptimal);
  EXPECT_EQ(r.objective, 0);  // as glpsol reports it
}

TEST(MathProg, RowsWithoutVariablesAreRefused) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  EXPECT_THAT(error_of(path("rows_without_variables.mod"), {}),
              HasSubstr("rows_without_variables.mod: the model has 2 rows (objective included) but no variables"));
}

// --time-limit is one budget for the whole command, glpsol's translation included. The model's
// translation sums 10^18 terms, so it ends by the limit on any machine, however fast or slow:
// the verdict does not depend on speed. Without the limit on glpsol, the call would run until
// the hang guard (kHangGuardS) kills it, and the test fails.
constexpr double kHangGuardS = 600;

TEST(MathProg, TranslationThatCannotFinishStopsAtTheTimeLimit) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  ReadOptions options;
  options.time_limit_s = 1;
  try {
    read_model_file(path("endless_translation.mod"), options);
    ADD_FAILURE() << "the endless translation finished";
  } catch (const ReadTimeLimit& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("endless_translation.mod: glpsol's MathProg translation did not finish within the time limit (1 s)"));
  }
}

TEST(MathProg, SolveCommandsTimeLimitBoundsTheTranslation) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol not installed (glpk-utils)";
  ProcessOptions guard;
  guard.timeout_s = kHangGuardS;
  std::string mod = path("endless_translation.mod");
  ProcessResult r = run_process({TREX_BINARY, "solve", "--json", mod, "--time-limit", "1"}, guard);
  ASSERT_FALSE(r.timed_out) << "trex solve ran past the hang guard: glpsol was not stopped";
  // A time-limit stop, not an error: exit 0, no solution, and why.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "time_limit_no_solution");
  EXPECT_TRUE(j["objective"].is_null());
  EXPECT_TRUE(j["variables"].empty());
  EXPECT_THAT(j["message"].get<std::string>(), HasSubstr("glpsol's MathProg translation did not finish"));

  r = run_process({TREX_BINARY, "solve", mod, "--time-limit", "1"}, guard);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model:     " + mod + " (not read: the time limit passed first)"));
  EXPECT_THAT(r.out, HasSubstr("status:    time_limit_no_solution"));
}

}  // namespace
}  // namespace trex::lp
