#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "trex/lp/lp_format.h"
#include "trex/util/data_dir.h"
#include "random_model.h"
#include "trex/util/error.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing_support::RandomModel;

Model expected_after_reading(Model m) {
  m.name_unnamed_rows();
  return m;
}

std::string write_error(const Model& m) {
  try {
    write_lp(m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LpName, ValidNames) {
  for (const char* name : {"x", "x1", "X_1", "flow[a,b]", "x[0][1]", "y[[2]]", "a.b", "_", "e5",
                           "E", "!x", "\"q\"", "#1", "$", "%p", "&", "(1)", "a,b", ";x", "?",
                           "@at", "{k}", "|v|", "~", "'s'", "`t`", "x.", "Min2", "ends",
                           "freedom", "info", "Constant"})
    EXPECT_TRUE(is_valid_lp_name(name)) << name;
}

TEST(LpName, InvalidNames) {
  for (const char* name : {"", "1x", ".x", "[x]", "x y", "x\ty", "x+y", "x-y", "x*y", "x/y",
                           "x^2", "x<y", "x>y", "x=y", "x:y", "x]", "x[", "x]]", "x[]]", "x][",
                           "st", "ST", "s.t.", "st.", "end", "End", "bounds", "Bound", "free",
                           "inf", "INF", "infinity", "Infinity", "nan", "min", "Maximize",
                           "subject", "such", "lazy", "user", "general", "generals", "gen",
                           "integer", "binary", "bin", "binaries", "semi", "sos", "sos2",
                           "x\n"})
    EXPECT_FALSE(is_valid_lp_name(name)) << name;
  EXPECT_TRUE(is_valid_lp_name(std::string(255, 'a')));
  EXPECT_FALSE(is_valid_lp_name(std::string(256, 'a')));
}

TEST(LpWriter, WritesEverySection) {
  Model m;
  m.name = "demo";
  m.sense = Sense::kMaximize;
  m.objective_name = "profit";
  m.objective_constant = -2.5;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 3);
  int n = m.add_var("n", -2, 9, VarType::kInteger, 1);
  int b = m.add_var("b", 0, 1, VarType::kBinary, -1);
  int f = m.add_var("f", -kInf, kInf);
  int u = m.add_var("u", -kInf, 4);
  int z = m.add_var("z", 7, 7);
  int h = m.add_var("h", 0, 0, VarType::kBinary);
  m.add_le("cap", {{x, 1}, {n, 2}}, 10);
  m.add_row("band", {{x, 1}, {f, -1}}, -5, 5);
  m.add_eq("fix", {{b, 1}, {u, 1}, {z, 0.1}}, 1);
  m.add_ge("", {{x, -1}}, -1);
  m.add_le("empty", {}, 3);
  m.add_objective_quad(x, x, 1.5);
  m.add_objective_quad(x, n, -2);
  m.row(0).quad.push_back(QuadTerm{x, n, 3});
  m.row(0).quad.push_back(QuadTerm{h, h, -1});
  std::string text = write_lp(m);

  EXPECT_THAT(text, HasSubstr("\\ Model demo\n"));
  EXPECT_THAT(text,
              HasSubstr("Maximize\n profit: 3 x + 1 n - 1 b - 2.5 + [ 3 x ^ 2 - 4 x * n ] / 2\n"));
  EXPECT_THAT(text, HasSubstr("Subject To\n"));
  EXPECT_THAT(text, HasSubstr(" cap: 1 x + 2 n + [ 3 x * n - 1 h ^ 2 ] <= 10\n"));
  EXPECT_THAT(text, HasSubstr(" band: -5 <= 1 x - 1 f <= 5\n"));
  EXPECT_THAT(text, HasSubstr(" fix: 1 b + 1 u + 0.1 z = 1\n"));
  EXPECT_THAT(text, HasSubstr(" c4: - 1 x >= -1\n"));
  EXPECT_THAT(text, HasSubstr(" empty: 0 x <= 3\n"));
  EXPECT_THAT(text, HasSubstr("Bounds\n x >= 0\n -2 <= n <= 9\n f free\n -inf <= u <= 4\n"
                              " z = 7\n h = 0\nGenerals"));  // a [0, 1] binary has no bounds line
  EXPECT_THAT(text, HasSubstr("Generals\n n\nBinaries\n b h\nEnd\n"));
}

TEST(LpWriter, EmptyObjectiveAndDefaults) {
  Model m;
  m.add_var("x");
  std::string text = write_lp(m);
  EXPECT_THAT(text, HasSubstr("Minimize\n obj: 0 x\n"));
  EXPECT_THAT(text, Not(HasSubstr("Model")));
  Model none;
  EXPECT_THAT(write_lp(none), HasSubstr(" obj: 0\n"));
}

TEST(LpWriter, LongExpressionsAreBrokenBeforeTerms) {
  Model m;
  std::vector<Term> terms;
  for (int j = 0; j < 200; ++j) terms.push_back(Term{m.add_var("var" + std::to_string(j), 0, kInf,
                                                               VarType::kContinuous, j - 100.5),
                                                     j + 0.25});
  m.add_le("long", terms, 1);
  std::string text = write_lp(m);
  std::istringstream in(text);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_LE(line.size(), 80u) << line;
    // A continuation line starts with a sign, never with a name.
    if (line.rfind("  ", 0) == 0) {
      EXPECT_TRUE(line[2] == '+' || line[2] == '-') << line;
    }
  }
  EXPECT_GT(lines, 100);
}

TEST(LpWriter, UnwritableModelsAreRefused) {
  Model spaced;
  spaced.add_var("x y");
  EXPECT_THAT(write_error(spaced), HasSubstr("x y: cannot be written as an LP name"));
  Model digit;
  digit.add_var("1x");
  EXPECT_THAT(write_error(digit), HasSubstr("1x: cannot be written as an LP name"));
  Model keyword;
  keyword.add_var("end");
  EXPECT_THAT(write_error(keyword), HasSubstr("end: cannot be written"));
  Model unnamed;
  unnamed.add_var("");
  EXPECT_THAT(write_error(unnamed), HasSubstr("variable 1: cannot be written"));
  Model row;
  int x = row.add_var("x");
  row.add_le("a-b", {{x, 1}}, 1);
  EXPECT_THAT(write_error(row), HasSubstr("a-b: cannot be written as an LP name"));
  Model free_row;
  int f = free_row.add_var("x");
  free_row.add_row("loose", {{f, 1}}, -kInf, kInf);
  EXPECT_THAT(write_error(free_row), HasSubstr("loose: free row cannot be written"));
  Model no_vars;
  no_vars.add_le("r", {}, 1);
  EXPECT_THAT(write_error(no_vars), HasSubstr("r: row without terms"));
  Model nan_cost;
  nan_cost.add_var("x", 0, kInf, VarType::kContinuous, std::nan(""));
  EXPECT_THAT(write_error(nan_cost), HasSubstr("not finite"));  // validate() runs first
  Model constant;
  constant.add_var("Constant", 1, 1, VarType::kContinuous, 2);
  EXPECT_THAT(write_error(constant), HasSubstr("Constant: an objective term on this name"));
  Model huge;
  int y = huge.add_var("y");
  huge.add_objective_quad(y, y, 1e308);
  EXPECT_THAT(write_error(huge), HasSubstr("too large"));
}

TEST(LpWriter, InvalidObjectiveNameFallsBack) {
  Model m;
  m.objective_name = "total cost";
  m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  EXPECT_THAT(write_lp(m), HasSubstr(" obj: 1 x\n"));
}

// Round trips go through read_lp (lp_reader.cc).
TEST(LpWriter, RandomModelsRoundTripExactly) {
  int failures = 0;
  for (unsigned seed = 1; seed <= 500 && failures < 5; ++seed) {
    Model m = RandomModel(seed, RandomModel::Names::kLp).make();
    std::string text = write_lp(m);
    Model back;
    try {
      back = read_lp(text, "round.lp");
    } catch (const InputError& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << text;
      ++failures;
      continue;
    }
    std::string why;
    bool same = same_model(expected_after_reading(m), back, &why);
    EXPECT_TRUE(same) << "seed " << seed << ": " << why << "\n" << text;
    failures += !same;
  }
}

TEST(LpWriter, GurobiConstantVariableRoundTrips) {
  // Gurobi's own LP files carry "Constant = 1" in Bounds and the constant in the objective.
  Model m;
  m.objective_constant = 12.5;
  m.add_var("x", 0, kInf, VarType::kContinuous, 1);
  m.add_var("Constant", 1, 1);
  Model back = read_lp(write_lp(m));
  std::string why;
  EXPECT_TRUE(same_model(m, back, &why)) << why;
}

TEST(LpWriter, RoundTripKeepsBinaryBoundsAndLoneVariables) {
  Model m;
  m.add_var("lonely", -3, 8);
  m.add_var("b0", 0, 0, VarType::kBinary);
  m.add_var("b1", 1, 1, VarType::kBinary);
  m.add_var("bh", 0, 0.5, VarType::kBinary);
  m.add_var("k", -kInf, kInf, VarType::kInteger);
  Model back = read_lp(write_lp(m));
  std::string why;
  EXPECT_TRUE(same_model(m, back, &why)) << why;
}

// Every benchmark model (real LP files, many written by Gurobi) survives write_lp -> read_lp.
TEST(LpWriter, BenchmarkModelsRoundTrip) {
  std::string root = find_data("or-benchmarks");
  if (root.empty()) GTEST_SKIP() << "no benchmark data (TREX_DATA_DIR)";
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".lp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    Model m;
    try {
      m = read_lp(text.str(), entry.path().string());
    } catch (const InputError&) {
      continue;  // the LP reader's tests own these
    }
    std::string why;
    try {
      EXPECT_TRUE(same_model(m, read_lp(write_lp(m)), &why)) << entry.path() << ": " << why;
    } catch (const InputError& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace trex::lp
