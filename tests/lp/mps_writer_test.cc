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
#include "trex/lp/mps_format.h"
#include "trex/util/data_dir.h"
#include "random_model.h"
#include "trex/util/error.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing_support::RandomModel;

// The model a reader gives back: unnamed rows named as name_unnamed_rows() does it.
Model expected_after_reading(Model m) {
  m.name_unnamed_rows();
  return m;
}

double ulp(double v) { return std::nextafter(std::fabs(v), kInf) - std::fabs(v); }

// MPS states a ranged row as one end and a width; for some pairs of ends no width lands
// exactly on the far end (see mps_writer.cc). Such a row must come back with one end exact
// and the other within an ulp; the expected model takes those read-back ends.
int accept_inexact_ranges(Model& expected, const Model& back, unsigned seed) {
  int inexact = 0;
  for (int r = 0; r < expected.num_rows(); ++r) {
    Constraint& e = expected.row(r);
    int br = back.find_row(e.name);
    if (br < 0 || e.sense() != RowSense::kRanged) continue;
    const Constraint& b = back.row(br);
    if (e.lower == b.lower && e.upper == b.upper) continue;
    bool lower_off = e.lower != b.lower, upper_off = e.upper != b.upper;
    EXPECT_FALSE(lower_off && upper_off) << "seed " << seed << " row " << e.name;
    if (lower_off) {
      EXPECT_LE(std::fabs(e.lower - b.lower), ulp(e.lower)) << "seed " << seed;
    }
    if (upper_off) {
      EXPECT_LE(std::fabs(e.upper - b.upper), ulp(e.upper)) << "seed " << seed;
    }
    e.lower = b.lower;
    e.upper = b.upper;
    ++inexact;
  }
  return inexact;
}

TEST(MpsWriter, RandomModelsRoundTripExactly) {
  int inexact_rows = 0;
  for (unsigned seed = 1; seed <= 500; ++seed) {
    Model m = RandomModel(seed, RandomModel::Names::kMps).make();
    std::string text = write_mps(m);
    Model back;
    try {
      back = read_mps(text, "round.mps");
    } catch (const InputError& e) {
      FAIL() << "seed " << seed << ": " << e.what() << "\n" << text;
    }
    Model expected = expected_after_reading(m);
    int inexact = accept_inexact_ranges(expected, back, seed);
    inexact_rows += inexact;
    std::string why;
    EXPECT_TRUE(same_model(expected, back, &why))
        << "seed " << seed << ": " << why << "\n" << text;
    // Writing what was read is a fixed point.
    std::string again = write_mps(back);
    if (inexact == 0) {
      EXPECT_EQ(again, text) << "seed " << seed;
    }
    EXPECT_TRUE(same_model(back, read_mps(again), &why)) << "seed " << seed << ": " << why;
  }
  // Most ranged rows are exact; the inexact ones are the rare unencodable pairs.
  EXPECT_LT(inexact_rows, 60);
}

TEST(MpsWriter, SectionsAndBounds) {
  Model m;
  m.name = "demo";
  m.sense = Sense::kMaximize;
  m.objective_name = "profit";
  m.objective_constant = 2.5;
  int x = m.add_var("x", 0, kInf, VarType::kContinuous, 3);
  int n = m.add_var("n", -2, 9, VarType::kInteger, 1);
  int b = m.add_var("b", 0, 1, VarType::kBinary, -1);
  int f = m.add_var("f", -kInf, kInf);
  int u = m.add_var("u", -kInf, 4);
  int z = m.add_var("z", 7, 7);
  m.add_le("cap", {{x, 1}, {n, 2}}, 10);
  m.add_row("band", {{x, 1}, {f, -1}}, -5, 5);
  m.add_eq("fix", {{b, 1}, {u, 1}, {z, 0.1}}, 1);
  m.add_ge("", {{x, 1}}, -1);
  m.add_objective_quad(x, x, 1.5);
  m.add_objective_quad(x, n, -2);
  m.row(0).quad.push_back(QuadTerm{x, n, 3});
  std::string text = write_mps(m);

  EXPECT_THAT(text, HasSubstr("NAME demo\n"));
  EXPECT_THAT(text, HasSubstr("OBJSENSE\n    MAX\n"));
  EXPECT_THAT(text, HasSubstr(" N profit\n"));
  EXPECT_THAT(text, HasSubstr(" G c4\n"));
  EXPECT_THAT(text, HasSubstr(" MARKER 'MARKER' 'INTORG'\n n profit 1\n"));
  EXPECT_THAT(text, HasSubstr(" RHS profit -2.5\n"));
  EXPECT_THAT(text, HasSubstr(" RNG band 10\n"));
  EXPECT_THAT(text, HasSubstr(" LO BND n -2\n UP BND n 9\n"));
  EXPECT_THAT(text, HasSubstr(" BV BND b\n"));
  EXPECT_THAT(text, HasSubstr(" FR BND f\n"));
  EXPECT_THAT(text, HasSubstr(" MI BND u\n UP BND u 4\n"));
  EXPECT_THAT(text, HasSubstr(" FX BND z 7\n"));
  EXPECT_THAT(text, Not(HasSubstr("BND x")));  // default bounds are not written
  EXPECT_THAT(text, HasSubstr("QUADOBJ\n x x 3\n x n -2\n"));
  EXPECT_THAT(text, HasSubstr("QCMATRIX cap\n x n 1.5\n n x 1.5\n"));
  EXPECT_THAT(text, HasSubstr("ENDATA\n"));

  Model back = read_mps(text);
  std::string why;
  EXPECT_TRUE(same_model(expected_after_reading(m), back, &why)) << why;
  EXPECT_EQ(back.objective_name, "profit");
  EXPECT_EQ(back.name, "demo");
}

TEST(MpsWriter, ObjectiveNameAvoidsRowNames) {
  Model m;
  int x = m.add_var("x");
  m.objective_name = "obj";
  m.add_le("obj", {{x, 1}}, 1);
  m.add_le("obj_1", {{x, 1}}, 2);
  std::string text = write_mps(m);
  EXPECT_THAT(text, HasSubstr(" N obj_2\n"));
  std::string why;
  EXPECT_TRUE(same_model(m, read_mps(text), &why)) << why;
}

TEST(MpsWriter, UnnamedRowsAvoidTakenNames) {
  Model m;
  int x = m.add_var("c1");
  m.add_le("", {{x, 1}}, 1);
  m.add_le("c2", {{x, 1}}, 2);
  m.add_le("", {{x, 1}}, 3);
  std::string text = write_mps(m);
  EXPECT_THAT(text, HasSubstr(" L c1_1\n L c2\n L c3\n"));
  std::string why;
  EXPECT_TRUE(same_model(expected_after_reading(m), read_mps(text), &why)) << why;
}

TEST(MpsWriter, EmptyColumnsStillExist) {
  Model m;
  m.add_var("lonely", -1, 1);
  std::string text = write_mps(m);
  EXPECT_THAT(text, HasSubstr(" lonely obj 0\n"));
  EXPECT_EQ(read_mps(text).num_vars(), 1);
}

TEST(MpsWriter, IntegerWithoutUpperBoundSaysSo) {
  Model m;
  m.add_var("k", 0, kInf, VarType::kInteger);
  EXPECT_THAT(write_mps(m), HasSubstr(" PL BND k\n"));
}

TEST(MpsWriter, BinaryWithTighterBounds) {
  Model m;
  m.add_var("b0", 0, 0, VarType::kBinary);
  m.add_var("h", 0, 0.5, VarType::kBinary);
  std::string text = write_mps(m);
  EXPECT_THAT(text, HasSubstr(" BV BND b0\n FX BND b0 0\n"));
  EXPECT_THAT(text, HasSubstr(" BV BND h\n UP BND h 0.5\n"));
  std::string why;
  EXPECT_TRUE(same_model(m, read_mps(text), &why)) << why;
}

TEST(MpsWriter, HardRangesStayExact) {
  // upper - lower rounds here; the writer must still find a range that lands exactly.
  const double ranges[][2] = {{0.1, 0.7}, {-1e-20, 1}, {1, 1e20}, {-1e20, 1},
                              {1.0 / 3, 2.0 / 3}, {-123.456, 1e-300}, {5e-324, 1e-323}};
  for (const auto& r : ranges) {
    Model m;
    int x = m.add_var("x");
    m.add_row("r", {{x, 1}}, r[0], r[1]);
    Model back = read_mps(write_mps(m));
    EXPECT_EQ(back.row(0).lower, r[0]);
    EXPECT_EQ(back.row(0).upper, r[1]);
  }
}

TEST(MpsWriter, UnencodableRangeIsOffByOneUlpAtMost) {
  // upper - lower needs one bit more than a double has, and no neighbour lands exactly.
  const double lower = -6.4084620945435266e-201, upper = 5.3729501247708964e-201;
  Model m;
  int x = m.add_var("x");
  m.add_row("r", {{x, 1}}, lower, upper);
  Model back = read_mps(write_mps(m));
  const Constraint& r = back.row(0);
  EXPECT_TRUE(r.lower == lower || r.upper == upper);
  EXPECT_LE(std::fabs(r.lower - lower), ulp(lower));
  EXPECT_LE(std::fabs(r.upper - upper), ulp(upper));
  EXPECT_LE(r.lower, r.upper);
}

TEST(MpsWriter, UnwritableModelsAreRefused) {
  auto error = [](const Model& m) {
    try {
      write_mps(m);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Model spaced;
  spaced.add_var("x y");
  EXPECT_THAT(error(spaced), HasSubstr("x y: cannot be written as an MPS name"));
  Model unnamed;
  unnamed.add_var("");
  EXPECT_THAT(error(unnamed), HasSubstr("variable 1: cannot be written"));
  Model tab;
  int t = tab.add_var("x");
  tab.add_le("a\tb", {{t, 1}}, 1);
  EXPECT_THAT(error(tab), HasSubstr("cannot be written as an MPS name"));
  Model free_row;
  int f = free_row.add_var("x");
  free_row.add_row("loose", {{f, 1}}, -kInf, kInf);
  EXPECT_THAT(error(free_row), HasSubstr("loose: free row cannot be written"));
  Model marker;
  int k = marker.add_var("x");
  marker.add_le("'MARKER'", {{k, 1}}, 1);
  EXPECT_THAT(error(marker), HasSubstr("cannot be written as an MPS name"));
  Model wide;
  int w = wide.add_var("x");
  wide.add_row("wide", {{w, 1}}, -1e308, 1e308);
  EXPECT_THAT(error(wide), HasSubstr("wide: range [-1e+308, 1e+308] is too wide"));
  Model bad;
  bad.add_var("x", 2, 1);
  EXPECT_THAT(error(bad), HasSubstr("exceeds upper bound"));  // validate() runs first
}

TEST(MpsWriter, ModelNameWithLineBreakStaysOnOneLine) {
  Model m;
  m.name = "two\nlines";
  m.add_var("x");
  Model back = read_mps(write_mps(m));
  EXPECT_EQ(back.name, "two lines");
}

// Every benchmark model (real LP files, many written by Gurobi) survives write_mps -> read_mps.
TEST(MpsWriter, BenchmarkModelsRoundTrip) {
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
      EXPECT_TRUE(same_model(m, read_mps(write_mps(m)), &why)) << entry.path() << ": " << why;
    } catch (const InputError& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace trex::lp
