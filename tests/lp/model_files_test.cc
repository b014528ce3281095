// Each MPS/LP convention of docs/solve.md on a small file of its own (tests/lp/files/), read
// and, where the file says what its optimum is, solved by the cbc back end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "trex/lp/lp_format.h"
#include "trex/lp/model_file.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/solver.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;

std::string path(const std::string& name) { return std::string(TREX_SOURCE_DIR) + "/tests/lp/files/" + name; }

Model read(const std::string& name, const MpsOptions& mps = {}) {
  ReadOptions options;
  options.mps = mps;
  return read_model_file(path(name), options);
}

const Variable& var(const Model& m, const std::string& name) {
  int j = m.find_var(name);
  EXPECT_GE(j, 0) << name;
  return m.var(j < 0 ? 0 : j);
}

double value(const Model& m, const SolveResult& r, const std::string& name) {
  int j = m.find_var(name);
  EXPECT_GE(j, 0) << name;
  return j < 0 || r.x.empty() ? std::nan("") : r.x[size_t(j)];
}

SolveResult solve(const Model& m) {
  SolveResult r = make_solver("cbc")->solve(m, SolveOptions{});
  EXPECT_EQ(r.status, SolveStatus::kOptimal) << r.message;
  EXPECT_LE(m.max_violation(r.x), 1e-6);
  return r;
}

TEST(ModelFiles, FixedFormatNamesWithSpacesContinuationAndDollarComments) {
  Model m = read("fixed_names.mps");
  EXPECT_EQ(m.name, "FIXED TEST");
  ASSERT_EQ(m.num_vars(), 2);
  ASSERT_GE(m.find_row("LIM 1"), 0);
  ASSERT_GE(m.find_row("LIM 2"), 0);
  EXPECT_EQ(m.objective_name, "COST");
  EXPECT_EQ(var(m, "X ONE").upper, 3);
  // The blank-name line adds to X ONE: its LIM 2 coefficient is 1.
  EXPECT_EQ(m.row(m.find_row("LIM 2")).terms.size(), 2u);
  SolveResult r = solve(m);
  EXPECT_NEAR(r.objective, 4, 1e-9);
  EXPECT_NEAR(value(m, r, "Y TWO"), 2, 1e-9);
  // Forced free, the same file is refused at the first line with a space in a name.
  try {
    read("fixed_names.mps", MpsOptions{MpsFormat::kFree, false});
    ADD_FAILURE() << "free reading should fail";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("fixed_names.mps:6:"));
  }
}

TEST(ModelFiles, ForcedFixedReadsTheSameAsDetected) {
  std::string why;
  EXPECT_TRUE(same_model(read("fixed_names.mps"), read("fixed_names.mps", {MpsFormat::kFixed, false}), &why)) << why;
  // A file whose fields keep to the fixed columns reads the same either way.
  EXPECT_TRUE(same_model(read("ranges.mps", {MpsFormat::kFixed, false}), read("ranges.mps", {MpsFormat::kFree, false}), &why)) << why;
}

TEST(ModelFiles, MarkerIntegersWithoutBoundsAreBinaryUnlessCplexReading) {
  Model coin = read("marker_integers.mps");
  EXPECT_EQ(var(coin, "a").type, VarType::kInteger);
  EXPECT_EQ(var(coin, "a").upper, 1);
  EXPECT_EQ(var(coin, "d").upper, kInf);  // named by a BOUNDS line: no default 1
  EXPECT_NEAR(solve(coin).objective, -9, 1e-9);
  Model cplex = read("marker_integers.mps", MpsOptions{MpsFormat::kAuto, true});
  EXPECT_EQ(var(cplex, "a").upper, kInf);
  EXPECT_NEAR(solve(cplex).objective, -15, 1e-9);
}

TEST(ModelFiles, ObjectiveConstantIsMinusTheObjectiveRowRhs) {
  Model m = read("objective_constant.mps");
  EXPECT_EQ(m.objective_constant, -10);
  EXPECT_NEAR(solve(m).objective, -9, 1e-9);
}

TEST(ModelFiles, ObjsenseSectionAndOneLineForms) {
  Model section = read("objsense_section.mps"), line = read("objsense_line.mps");
  EXPECT_EQ(section.sense, Sense::kMaximize);
  EXPECT_EQ(line.sense, Sense::kMaximize);
  std::string why;
  EXPECT_TRUE(same_model(section, line, &why)) << why;
  EXPECT_NEAR(solve(section).objective, 2.8, 1e-9);
  // The writer states the sense, and it reads back.
  Model again = read_mps(write_mps(section));
  EXPECT_EQ(again.sense, Sense::kMaximize);
  EXPECT_THAT(write_mps(section), HasSubstr("OBJSENSE"));
}

TEST(ModelFiles, RangesFollowTheSignRule) {
  Model m = read("ranges.mps");
  auto bounds = [&](const std::string& r) {
    const Constraint& c = m.row(m.find_row(r));
    return std::pair(c.lower, c.upper);
  };
  EXPECT_EQ(bounds("epos"), std::pair(4.0, 6.0));
  EXPECT_EQ(bounds("eneg"), std::pair(2.0, 5.0));
  EXPECT_EQ(bounds("le"), std::pair(1.0, 3.0));
  EXPECT_EQ(bounds("ge"), std::pair(7.0, 9.0));
  EXPECT_NEAR(solve(m).objective, 23, 1e-9);
}

TEST(ModelFiles, EveryBoundType) {
  Model m = read("bounds.mps");
  auto b = [&](const std::string& n) { return std::pair(var(m, n).lower, var(m, n).upper); };
  EXPECT_EQ(b("up_neg"), std::pair(-kInf, -5.0));
  EXPECT_EQ(b("mi"), std::pair(-kInf, 8.0));
  EXPECT_EQ(b("pl"), std::pair(-3.0, kInf));
  EXPECT_EQ(b("bv"), std::pair(0.0, 1.0));
  EXPECT_EQ(var(m, "bv").type, VarType::kBinary);
  EXPECT_EQ(b("li"), std::pair(2.0, kInf));
  EXPECT_EQ(var(m, "li").type, VarType::kInteger);
  EXPECT_EQ(b("ui"), std::pair(0.0, 7.0));
  EXPECT_EQ(var(m, "ui").type, VarType::kInteger);
  EXPECT_EQ(b("fr"), std::pair(-kInf, kInf));
  EXPECT_EQ(b("fx"), std::pair(3.5, 3.5));
  EXPECT_EQ(b("sc"), std::pair(2.0, 6.0));
  EXPECT_TRUE(var(m, "sc").semicontinuous);
  EXPECT_EQ(b("lo"), std::pair(-1.0, kInf));
  std::string why;
  EXPECT_TRUE(same_model(m, read_mps(write_mps(m)), &why)) << why;
  EXPECT_TRUE(same_model(m, read_lp(write_lp(m)), &why)) << why;
}

TEST(ModelFiles, SosSetsAreBranchedOnAndWrittenBack) {
  Model m = read("sos.mps");
  ASSERT_EQ(m.sos.size(), 2u);
  EXPECT_EQ(m.sos[0].name, "sx");
  EXPECT_EQ(m.sos[0].type, 1);
  EXPECT_EQ(m.sos[0].priority, 2);
  EXPECT_EQ(m.sos[1].type, 2);
  EXPECT_EQ(m.sos[1].weights, (std::vector<double>{10, 20, 30, 40}));
  SolveResult r = solve(m);
  EXPECT_NEAR(r.objective, 25, 1e-9);
  EXPECT_NEAR(value(m, r, "x3"), 5, 1e-9);
  std::string why;
  EXPECT_TRUE(same_model(m, read_mps(write_mps(m)), &why)) << why;
  // LP has no place for priorities; everything else survives.
  Model no_priority = m;
  for (auto& s : no_priority.sos) s.priority = 0;
  EXPECT_TRUE(same_model(no_priority, read_lp(write_lp(m)), &why)) << why;
}

TEST(ModelFiles, SemicontinuousIsZeroOrWithinBounds) {
  Model m = read("semicontinuous.mps");
  EXPECT_TRUE(var(m, "x").semicontinuous);
  SolveResult r = solve(m);
  EXPECT_NEAR(r.objective, 2, 1e-9);
  EXPECT_NEAR(value(m, r, "x"), 2, 1e-9);
  EXPECT_EQ(r.x.size(), size_t(m.num_vars()));  // the helper binary is not reported
}

TEST(ModelFiles, LpReaderTakesSosAndSemicontinuous) {
  Model m = read("sos_semicontinuous.lp");
  ASSERT_EQ(m.sos.size(), 2u);
  EXPECT_TRUE(var(m, "s").semicontinuous);
  EXPECT_NEAR(solve(m).objective, 23, 1e-9);
  std::string why;
  EXPECT_TRUE(same_model(m, read_lp(write_lp(m)), &why)) << why;
  EXPECT_TRUE(same_model(m, read_mps(write_mps(m)), &why)) << why;
}

TEST(ModelFiles, QuadObjIsTheUpperTriangleAndQMatrixTheWholeQ) {
  Model upper = read("quadobj.mps"), full = read("qmatrix.mps");
  full.name = upper.name;
  std::string why;
  EXPECT_TRUE(same_model(upper, full, &why)) << why;
  // 1/2 x'Qx with Q = [2 1; 1 2]: x^2 + xy + y^2.
  EXPECT_EQ(upper.objective_value({1, 2}), 1 + 2 + 4 - 2 - 8);
  for (const Model* m : {&upper, &full}) {
    SolveResult r = solve(*m);
    EXPECT_NEAR(r.objective, -4, 1e-6);
    EXPECT_NEAR(value(*m, r, "x"), 0, 1e-5);
    EXPECT_NEAR(value(*m, r, "y"), 2, 1e-5);
  }
}

TEST(ModelFiles, ConesAreRefusedByName) {
  try {
    read("conic.mps");
    ADD_FAILURE() << "CSECTION must be refused";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("conic.mps:11:"));
    EXPECT_THAT(e.what(), HasSubstr("CSECTION"));
  }
}

TEST(ModelFiles, OtherBackEndsRefuseSosAndSemicontinuous) {
  Model m = read("sos.mps");
  for (const char* name : {"sbb", "glpk"}) {
    SolveResult r = make_solver(name)->solve(m, SolveOptions{});
    EXPECT_TRUE(r.status == SolveStatus::kUnsupported || r.status == SolveStatus::kError) << name;
  }
}

}  // namespace
}  // namespace trex::lp
