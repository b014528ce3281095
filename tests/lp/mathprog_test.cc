// GNU MathProg through glpsol: the objective sense survives, data files are used, and errors
// name the file and line. Skipped (with the reason) where glpsol is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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
  if (program_available("glpsol")) EXPECT_THAT(error_of(path("production.mod"), {}), HasSubstr("production.mod:"));
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

}  // namespace
}  // namespace trex::lp
