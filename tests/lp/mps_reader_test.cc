#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "trex/lp/mps_format.h"
#include "trex/util/error.h"

namespace trex::lp {
namespace {

using ::testing::HasSubstr;

// The one-line message read_mps throws for `text`, or "" when it reads fine.
std::string mps_error(const std::string& text) {
  try {
    read_mps(text, "bad.mps");
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "error must be one line";
    return what;
  }
  return "";
}

// Expects an error on `line` whose message contains `words`.
void expect_error(const std::string& text, long line, const std::string& words) {
  std::string msg = mps_error(text);
  EXPECT_THAT(msg, HasSubstr("bad.mps:" + std::to_string(line) + ":")) << text;
  EXPECT_THAT(msg, HasSubstr(words)) << text;
}

const Variable& var(const Model& m, const std::string& name) {
  int j = m.find_var(name);
  EXPECT_GE(j, 0) << name;
  return m.var(j < 0 ? 0 : j);
}

const Constraint& row(const Model& m, const std::string& name) {
  int r = m.find_row(name);
  EXPECT_GE(r, 0) << name;
  return m.row(r < 0 ? 0 : r);
}

double coef(const Model& m, const std::string& row_name, const std::string& var_name) {
  int j = m.find_var(var_name);
  for (const Term& t : row(m, row_name).terms)
    if (t.var == j) return t.coef;
  return 0;
}

// A small model with every section; the numbers below are checked one by one.
const char* kFull = R"(* a comment line
NAME          full model
OBJSENSE
    MAX
ROWS
 N  cost
 L  lim
 G  need
 E  bal
 N  other
 E  rng
COLUMNS
    x         cost      1.5          lim       2
    x         need      -1           other     99
    MARKER    'MARKER'  'INTORG'
    k         cost      3            bal       1
    b         lim       1
    MARKER    'MARKER'  'INTEND'
    y         bal       -2           rng       1
    z         cost      -1
RHS
    RHS       cost      -7           lim       10
    RHS       need      -4           bal       3
    RHS       rng       5
RANGES
    RNG       rng       2.5
BOUNDS
 UP BND       x         8
 BV BND       b
 MI BND       y
 UP BND       y         6
 FR BND       z
QUADOBJ
    x         x         4
    x         y         3
QCMATRIX   lim
    x         x         1
    x         y         0.5
    y         x         0.5
ENDATA
)";

TEST(MpsReader, ReadsEverySection) {
  Model m = read_mps(kFull, "full.mps");
  EXPECT_EQ(m.name, "full model");
  EXPECT_EQ(m.sense, Sense::kMaximize);
  EXPECT_EQ(m.objective_name, "cost");
  EXPECT_EQ(m.objective_constant, 7);
  ASSERT_EQ(m.num_vars(), 5);
  ASSERT_EQ(m.num_rows(), 4);  // the second N row is dropped
  EXPECT_EQ(m.var(0).name, "x");
  EXPECT_EQ(m.var(1).name, "k");
  EXPECT_EQ(m.row(0).name, "lim");
  EXPECT_EQ(m.row(3).name, "rng");

  EXPECT_EQ(var(m, "x").cost, 1.5);
  EXPECT_EQ(var(m, "k").cost, 3);
  EXPECT_EQ(var(m, "z").cost, -1);
  EXPECT_EQ(var(m, "x").type, VarType::kContinuous);
  EXPECT_EQ(var(m, "k").type, VarType::kInteger);
  EXPECT_EQ(var(m, "k").lower, 0);
  EXPECT_EQ(var(m, "k").upper, 1);  // a marker integer no BOUNDS line names: [0, 1]
  EXPECT_EQ(var(m, "b").type, VarType::kBinary);
  EXPECT_EQ(var(m, "b").upper, 1);
  EXPECT_EQ(var(m, "x").upper, 8);
  EXPECT_EQ(var(m, "y").lower, -kInf);
  EXPECT_EQ(var(m, "y").upper, 6);
  EXPECT_EQ(var(m, "z").lower, -kInf);
  EXPECT_EQ(var(m, "z").upper, kInf);

  EXPECT_EQ(coef(m, "lim", "x"), 2);
  EXPECT_EQ(coef(m, "lim", "b"), 1);
  EXPECT_EQ(coef(m, "need", "x"), -1);
  EXPECT_EQ(coef(m, "bal", "y"), -2);
  EXPECT_EQ(row(m, "lim").lower, -kInf);
  EXPECT_EQ(row(m, "lim").upper, 10);
  EXPECT_EQ(row(m, "need").lower, -4);
  EXPECT_EQ(row(m, "need").upper, kInf);
  EXPECT_EQ(row(m, "bal").lower, 3);
  EXPECT_EQ(row(m, "bal").upper, 3);
  EXPECT_EQ(row(m, "rng").lower, 5);
  EXPECT_EQ(row(m, "rng").upper, 7.5);

  // QUADOBJ: 0.5 * (4 x^2 + 2 * 3 x y) = 2 x^2 + 3 x y.
  ASSERT_EQ(m.objective_quad.size(), 2u);
  EXPECT_EQ(m.objective_quad[0], (QuadTerm{0, 0, 2}));
  EXPECT_EQ(m.objective_quad[1], (QuadTerm{0, 3, 3}));
  // QCMATRIX: x'Qx = x^2 + 0.5 x y + 0.5 y x.
  const auto& q = row(m, "lim").quad;
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0], (QuadTerm{0, 0, 1}));
  EXPECT_EQ(q[1], (QuadTerm{0, 3, 1}));
  EXPECT_NO_THROW(m.validate());
}

std::string with_bounds(const std::string& bounds) {
  return "NAME b\nROWS\n N obj\n L c\nCOLUMNS\n x obj 1 c 1\n"
         " MARKER 'MARKER' 'INTORG'\n n obj 1\n MARKER 'MARKER' 'INTEND'\n"
         "BOUNDS\n" + bounds + "ENDATA\n";
}

TEST(MpsReader, EveryBoundType) {
  struct Case {
    std::string bounds;
    double lower, upper;
    VarType type;
  };
  const Case cases[] = {
      {"", 0, kInf, VarType::kContinuous},
      {" UP B x 4\n", 0, 4, VarType::kContinuous},
      {" UP B x -4\n", -kInf, -4, VarType::kContinuous},  // CPLEX's rule
      {" LO B x -9\n UP B x -4\n", -9, -4, VarType::kContinuous},
      {" LO B x 0\n UP B x -4\n", 0, -4, VarType::kContinuous},  // explicit 0 stays: error
      {" LO B x 2.5\n", 2.5, kInf, VarType::kContinuous},
      {" FX B x 3\n", 3, 3, VarType::kContinuous},
      {" FR B x\n", -kInf, kInf, VarType::kContinuous},
      {" MI B x\n", -kInf, kInf, VarType::kContinuous},
      {" UP B x 5\n PL B x\n", 0, kInf, VarType::kContinuous},
      {" BV B x\n", 0, 1, VarType::kBinary},
      {" BV B x 1\n", 0, 1, VarType::kBinary},
      {" LI B x -3\n", -3, kInf, VarType::kInteger},
      {" UI B x 7\n", 0, 7, VarType::kInteger},
      {" UP B x 1e30\n", 0, kInf, VarType::kContinuous},
      {" LO B x -1e30\n", -kInf, kInf, VarType::kContinuous},
      {" LO B x -inf\n UP B x Infinity\n", -kInf, kInf, VarType::kContinuous},
      {" BV B x\n FX B x 0\n", 0, 0, VarType::kBinary},
      {" BV B x\n UP B x 5\n", 0, 5, VarType::kInteger},  // widened: no longer binary
      // Without a set name.
      {" UP x 4\n", 0, 4, VarType::kContinuous},
      {" FR x\n", -kInf, kInf, VarType::kContinuous},
      {" BV x\n", 0, 1, VarType::kBinary},
      // A second bound set is ignored, as in every MPS reader.
      {" UP B x 4\n UP OTHER x 9\n", 0, 4, VarType::kContinuous},
  };
  for (const Case& c : cases) {
    std::string text = with_bounds(c.bounds);
    if (c.lower > c.upper) {
      EXPECT_THAT(mps_error(text), HasSubstr("cross")) << c.bounds;
      continue;
    }
    Model m = read_mps(text);
    EXPECT_EQ(var(m, "x").lower, c.lower) << c.bounds;
    EXPECT_EQ(var(m, "x").upper, c.upper) << c.bounds;
    EXPECT_EQ(var(m, "x").type, c.type) << c.bounds;
  }
}

TEST(MpsReader, IntegerMarkersWithoutBoundsAreBinaryAsInCoinAndGlpk) {
  Model m = read_mps(with_bounds(""));
  EXPECT_EQ(var(m, "n").type, VarType::kInteger);
  EXPECT_EQ(var(m, "n").lower, 0);
  EXPECT_EQ(var(m, "n").upper, 1);
  MpsOptions cplex;
  cplex.integer_markers_unbounded = true;
  EXPECT_EQ(var(read_mps(with_bounds(""), "b.mps", cplex), "n").upper, kInf);
  EXPECT_EQ(var(m, "x").type, VarType::kContinuous);
  Model neg = read_mps(with_bounds(" UP B n -2\n"));
  EXPECT_EQ(var(neg, "n").lower, -kInf);
  EXPECT_EQ(var(neg, "n").upper, -2);
}

std::string with_range(char type, const std::string& rhs, const std::string& range) {
  return std::string("NAME r\nROWS\n N obj\n ") + type +
         " c\nCOLUMNS\n x c 1\nRHS\n RHS c " + rhs + "\nRANGES\n RNG c " + range + "\nENDATA\n";
}

TEST(MpsReader, RangeSignRules) {
  struct Case {
    char type;
    const char* rhs;
    const char* range;
    double lower, upper;
  };
  const Case cases[] = {
      {'E', "4", "3", 4, 7},     {'E', "4", "-3", 1, 4},   {'E', "4", "0", 4, 4},
      {'L', "4", "3", 1, 4},     {'L', "4", "-3", 1, 4},   {'G', "4", "3", 4, 7},
      {'G', "4", "-3", 4, 7},    {'E', "4", "1e30", 4, kInf}, {'L', "4", "-inf", -kInf, 4},
  };
  for (const Case& c : cases) {
    Model m = read_mps(with_range(c.type, c.rhs, c.range));
    EXPECT_EQ(m.row(0).lower, c.lower) << c.type << " " << c.rhs << " " << c.range;
    EXPECT_EQ(m.row(0).upper, c.upper) << c.type << " " << c.rhs << " " << c.range;
  }
}

TEST(MpsReader, RangesBeforeRhs) {
  Model m = read_mps(
      "NAME r\nROWS\n N obj\n L c\nCOLUMNS\n x c 1\nRANGES\n RNG c 2\nRHS\n RHS c 5\nENDATA\n");
  EXPECT_EQ(m.row(0).lower, 3);
  EXPECT_EQ(m.row(0).upper, 5);
}

TEST(MpsReader, ObjectiveSenseSpellings) {
  const char* body = "ROWS\n N obj\nCOLUMNS\n x obj 1\nENDATA\n";
  struct Case {
    const char* header;
    Sense sense;
  };
  const Case cases[] = {
      {"OBJSENSE MAX\n", Sense::kMaximize},      {"OBJSENSE\n    MAX\n", Sense::kMaximize},
      {"OBJSENSE MAXIMIZE\n", Sense::kMaximize}, {"OBJSENSE\n  MAXIMIZE\n", Sense::kMaximize},
      {"OBJSENSE\n\tmax\n", Sense::kMaximize},   {"OBJSENSE MIN\n", Sense::kMinimize},
      {"OBJSENSE\nMAX\n", Sense::kMaximize},  // unindented, as some writers do
      {"OBJSENSE\n    MIN\n", Sense::kMinimize}, {"OBJSENSE\n MINIMIZE\n", Sense::kMinimize},
      {"", Sense::kMinimize},
  };
  for (const Case& c : cases) {
    Model m = read_mps(std::string("NAME s\n") + c.header + body);
    EXPECT_EQ(m.sense, c.sense) << c.header;
  }
  expect_error(std::string("NAME s\nOBJSENSE\n    UP\n") + body, 3, "objective sense");
  expect_error(std::string("NAME s\nOBJSENSE SIDEWAYS\n") + body, 2, "objective sense");
}

TEST(MpsReader, ObjectiveConstantIsMinusRhs) {
  Model m = read_mps("NAME c\nROWS\n N obj\nCOLUMNS\n x obj 1\nRHS\n RHS obj 2.5\nENDATA\n");
  EXPECT_EQ(m.objective_constant, -2.5);
  Model n = read_mps("NAME c\nROWS\n N obj\nCOLUMNS\n x obj 1\nRHS\n RHS obj -4\nENDATA\n");
  EXPECT_EQ(n.objective_constant, 4);
}

TEST(MpsReader, QuadObjAndQMatrixAgree) {
  const char* head = "NAME q\nROWS\n N obj\n L c\nCOLUMNS\n x obj 1 c 1\n y obj 1 c 1\n"
                     " z c 1\nRHS\n RHS c 4\n";
  Model upper = read_mps(std::string(head) +
                         "QUADOBJ\n x x 2\n x y -3\n y y 5\n y z 1.5\nENDATA\n");
  Model full = read_mps(std::string(head) +
                        "QMATRIX\n x x 2\n x y -3\n y x -3\n y y 5\n y z 1.5\n z y 1.5\nENDATA\n");
  std::string why;
  EXPECT_TRUE(same_model(upper, full, &why)) << why;
  // 0.5 x'Qx: x^2 - 3xy + 2.5y^2 + 1.5yz.
  ASSERT_EQ(upper.objective_quad.size(), 4u);
  EXPECT_EQ(upper.objective_quad[0], (QuadTerm{0, 0, 1}));
  EXPECT_EQ(upper.objective_quad[1], (QuadTerm{0, 1, -3}));
  EXPECT_EQ(upper.objective_quad[2], (QuadTerm{1, 1, 2.5}));
  EXPECT_EQ(upper.objective_quad[3], (QuadTerm{1, 2, 1.5}));
  EXPECT_EQ(upper.objective_value({1, 2, 3}), 1 - 6 + 10 + 9 + 3);
}

TEST(MpsReader, QcMatrixIsFullWithoutHalf) {
  Model m = read_mps("NAME q\nROWS\n N obj\n L c\n G d\nCOLUMNS\n x c 1\n y d 1\n"
                     "RHS\n RHS c 4\nQCMATRIX c\n x x 3\n x y 1\n y x 1\n"
                     "QCMATRIX d\n y y -2\nENDATA\n");
  ASSERT_EQ(m.row(0).quad.size(), 2u);
  EXPECT_EQ(m.row(0).quad[0], (QuadTerm{0, 0, 3}));
  EXPECT_EQ(m.row(0).quad[1], (QuadTerm{0, 1, 2}));
  ASSERT_EQ(m.row(1).quad.size(), 1u);
  EXPECT_EQ(m.row(1).quad[0], (QuadTerm{1, 1, -2}));
}

TEST(MpsReader, LenientLayout) {
  // CRLF, tabs, blank lines, comments anywhere, lower-case keywords and types, '+' signs,
  // RHS without a set name, two pairs per line, text after ENDATA.
  Model m = read_mps(
      "* comment\r\nNAME\r\n\r\nrows\r\n n obj\r\n\tl c\r\n* another\r\n g d\r\n"
      "COLUMNS\r\n x obj +1.5 c 1e0\r\n x d .5\r\nRHS\r\n c 4 d -2\r\nENDATA\r\ngarbage\n\x01");
  EXPECT_EQ(m.name, "");
  EXPECT_EQ(var(m, "x").cost, 1.5);
  EXPECT_EQ(coef(m, "d", "x"), 0.5);
  EXPECT_EQ(row(m, "c").upper, 4);
  EXPECT_EQ(row(m, "d").lower, -2);
}

TEST(MpsReader, SecondRhsSetIgnored) {
  Model m = read_mps("NAME s\nROWS\n N obj\n L c\nCOLUMNS\n x c 1\n"
                     "RHS\n R1 c 4\n R2 c 9\nENDATA\n");
  EXPECT_EQ(m.row(0).upper, 4);
}

TEST(MpsReader, DroppedFreeRowsAreIgnoredEverywhere) {
  Model m = read_mps("NAME s\nROWS\n N obj\n N spare\n L c\nCOLUMNS\n x spare 3 c 1\n"
                     "RHS\n RHS spare 9 c 2\nRANGES\n RNG spare 1\nENDATA\n");
  EXPECT_EQ(m.num_rows(), 1);
  EXPECT_EQ(m.objective_constant, 0);
  EXPECT_EQ(var(m, "x").cost, 0);
}

TEST(MpsReader, UnderflowReadsAsTinyOrZero) {
  Model m = read_mps("NAME u\nROWS\n N obj\nCOLUMNS\n x obj 1e-400\n y obj 5e-324\nENDATA\n");
  EXPECT_EQ(var(m, "x").cost, 0);
  EXPECT_EQ(var(m, "y").cost, 5e-324);
}

const std::string kHead = "NAME e\nROWS\n N obj\n L c\nCOLUMNS\n";  // lines 1-5

TEST(MpsReader, ErrorsNameFileAndLine) {
  expect_error("", 1, "empty");
  expect_error("* only a comment\n\n", 1, "empty");
  expect_error("NAME x\nENDATA\n", 2, "no ROWS");
  expect_error(kHead + " x c 1\n", 6, "missing ENDATA");
  expect_error(kHead + " x c 1", 6, "missing ENDATA");
  expect_error("NAME x\nROWZ\nENDATA\n", 2, "unknown section");
  expect_error(" x c 1\nENDATA\n", 1, "outside any section");
  expect_error("NAME x\nROWS\n N obj\n Q c\nENDATA\n", 4, "unknown row type");
  expect_error("NAME x\nROWS\n N obj\n LL c\nENDATA\n", 4, "unknown row type");
  expect_error("NAME x\nROWS\n N obj\n L c\n G c\nENDATA\n", 5, "duplicate row");
  expect_error("NAME x\nROWS\n N obj\n L obj\nENDATA\n", 4, "duplicate row");
  expect_error("NAME x\nROWS\n N obj\n L\nENDATA\n", 4, "ROWS line");
  expect_error(kHead + " x c 1\n x d 1\nENDATA\n", 7, "unknown row 'd'");
  expect_error(kHead + " x c 1 obj\nENDATA\n", 6, "COLUMNS line");
  expect_error(kHead + " x c 1\nRHS\n RHS d 1\nENDATA\n", 8, "unknown row 'd'");
  expect_error(kHead + " x c 1\nRANGES\n RNG d 1\nENDATA\n", 8, "unknown row 'd'");
  expect_error(kHead + " x c 1\nBOUNDS\n UP BND y 1\nENDATA\n", 8, "unknown column 'y'");
  expect_error(kHead + " x c 1\nBOUNDS\n XX BND x 1\nENDATA\n", 8, "unknown bound type");
  expect_error(kHead + " x c 1\nBOUNDS\n UP x\nENDATA\n", 8, "expected TYPE");
  expect_error(kHead + " M 'MARKER' 'INTORG'\n x c 1\n M 'MARKER' 'INTEND'\nBOUNDS\n SC BND x 4\nENDATA\n", 10,
               "SC (semi-continuous) bound on the integer column 'x'");
  expect_error(kHead + " x c 1\nBOUNDS\n SC BND x 4\n BV BND x\nENDATA\n", 9, "semi-continuous");
  expect_error(kHead + " x c 1\nBOUNDS\n SC BND x\nENDATA\n", 8, "finite SC bound");
  expect_error(kHead + " x c 1\nSOS\n S1 SOS s1 1\n    y 1\nENDATA\n", 9, "SOS set 's1' names unknown column 'y'");
  expect_error(kHead + " x c 1\nSOS\n    x 1\nENDATA\n", 8, "before an S1 or S2 header");
  expect_error(kHead + " x c 1\nSOS\n S1 SOS s1 1\n    x 1\n    x 2\nENDATA\n", 10, "names 'x' twice");
  expect_error(kHead + " x c 1\nSOS\n S1 SOS s1 1\n    s2 x 1\nENDATA\n", 9, "names set 's2'");
  expect_error(kHead + " x c 1\nSOS\n S1 SOS s1 1.5\nENDATA\n", 8, "priority must be an integer");
  expect_error(kHead + " x c 1\nSOS\n S1 s\n S2 s\nENDATA\n", 9, "duplicate SOS set name");
  expect_error(kHead + " x c 1\nCSECTION c1 0 QUAD\n x\nENDATA\n", 7, "CSECTION");
  // Sections out of order or twice.
  expect_error("NAME x\nCOLUMNS\n x c 1\nROWS\n N obj\nENDATA\n", 2, "out of order");
  expect_error(kHead + " x c 1\nBOUNDS\nRHS\n RHS c 1\nENDATA\n", 8, "RHS section out of order");
  expect_error(kHead + " x c 1\nRANGES\nBOUNDS\nRANGES\nENDATA\n", 9, "second RANGES");
  expect_error(kHead + " x c 1\nQUADOBJ\nBOUNDS\nENDATA\n", 8, "out of order");
  expect_error(kHead + " x c 1\nRHS\nRHS\nENDATA\n", 8, "second RHS");
  expect_error(kHead + " x c 1\nROWS\nENDATA\n", 7, "second ROWS");
  expect_error("NAME x\nROWS\n N obj\nOBJSENSE MAX\nCOLUMNS\nENDATA\n", 4, "out of order");
  expect_error(kHead + " x c 1.5x\nENDATA\n", 6, "expected a number");
  expect_error(kHead + " x c 0x10\nENDATA\n", 6, "expected a number");
  expect_error(kHead + " x c --1\nENDATA\n", 6, "expected a number");
  expect_error(kHead + " x c +\nENDATA\n", 6, "expected a number");
  expect_error(kHead + " x c nan\nENDATA\n", 6, "NaN");
  expect_error(kHead + " x c 1\nRHS\n RHS c NaN\nENDATA\n", 8, "NaN");
  expect_error(kHead + " x c 1\nBOUNDS\n UP BND x -nan\nENDATA\n", 8, "NaN");
  expect_error(kHead + " x c inf\nENDATA\n", 6, "infinite");
  expect_error(kHead + " x obj -Infinity\nENDATA\n", 6, "infinite");
  expect_error(kHead + " x c 1e400\nENDATA\n", 6, "out of range");
  expect_error(kHead + " x c 1\nRHS\n RHS c -1e999\nENDATA\n", 8, "out of range");
  expect_error(kHead + " x c 1\nRHS\n RHS obj 1e30\nENDATA\n", 8, "objective constant");
  expect_error(kHead + " x c 1\nBOUNDS\n LO BND x 5\n UP BND x 4\nENDATA\n", 9, "lower > upper");
  expect_error(kHead + " x c 1\nBOUNDS\n LO BND x inf\nENDATA\n", 8, "+infinity");
  expect_error(kHead + " x c 1\nBOUNDS\n UP BND x -1e31\nENDATA\n", 8, "-infinity");
  expect_error(kHead + " x c 1\nBOUNDS\n FX BND x 1e30\nENDATA\n", 8, "infinite");
  expect_error(kHead + " x c 1\nRHS\n RHS c -inf\nENDATA\n", 8, "impossible range");
  expect_error(kHead + " x c 1\nQUADOBJ\n x z 1\nENDATA\n", 8, "unknown column 'z'");
  expect_error(kHead + " x c 1\nQUADOBJ\n x x\nENDATA\n", 8, "quadratic entry");
  expect_error(kHead + " x c 1\nQUADOBJ\n x x inf\nENDATA\n", 8, "infinite");
  expect_error(kHead + " x c 1\nQCMATRIX d\n x x 1\nENDATA\n", 7, "unknown row 'd'");
  expect_error(kHead + " x c 1\nQCMATRIX obj\n x x 1\nENDATA\n", 7, "free row");
  expect_error(kHead + " x c 1\nQCMATRIX\nENDATA\n", 7, "needs a row name");
  expect_error(kHead + " M 'MARKER' 'SOSORG'\nENDATA\n", 6, "unknown marker");
  expect_error(kHead + " x c 1 c 2 c 3\nENDATA\n", 6, "too many fields");
  expect_error(kHead + " x c 1\nRHS\n RHS\nENDATA\n", 8, "expected [set name]");
}

TEST(MpsReader, BinaryDataIsRefused) {
  expect_error(kHead + " x c 1\n" + std::string("\0\0\0", 3) + "\nENDATA\n", 7, "binary data");
  expect_error(kHead + " x c\x07 1\nENDATA\n", 6, "binary data");
  expect_error("\x7f" "ELF\nENDATA\n", 1, "binary data");
  expect_error(kHead + " x c 1\f\nENDATA\n", 6, "control character 12");
}

TEST(MpsReader, HugeGarbageLineFailsFast) {
  const size_t n = 20u << 20;  // 20 MB; the scan is linear, so 100 MB only takes longer
  std::string letters(n, 'a');
  std::string msg = mps_error(letters);
  EXPECT_THAT(msg, HasSubstr("bad.mps:1: unknown section"));
  EXPECT_LT(msg.size(), 200u);  // the token is cut short in the message

  std::string spaced(n, ' ');
  for (size_t k = 1; k < n; k += 2) spaced[k] = 'z';
  EXPECT_THAT(mps_error(spaced), HasSubstr("bad.mps:1: data line outside any section"));
  EXPECT_THAT(mps_error(kHead + spaced + "\nENDATA\n"), HasSubstr("bad.mps:6: too many fields"));

  std::mt19937 rng(7);
  std::string random(n, ' ');
  for (char& c : random) c = char(rng() & 0xff);
  for (char& c : random)
    if (c == '\n') c = 'n';
  EXPECT_THAT(mps_error(random), HasSubstr("bad.mps:1: "));
  EXPECT_THAT(mps_error(kHead + " x c " + letters + "\nENDATA\n"),
              HasSubstr("bad.mps:6: expected a number"));
}

TEST(MpsReader, MutatedInputNeverCrashesOrYieldsAnInvalidModel) {
  // Every outcome is either an InputError or a model that validate() accepts.
  const std::string base = kFull;
  const char* inserts[] = {" ", "\n", "-", "inf", "nan", "1e400", "'MARKER'", " UP", " BV",
                           "RANGES\n", "x", "0", "\t", "*", "E", "-1e30", "QCMATRIX c\n"};
  std::mt19937 rng(42);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = base;
    for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1 + rng() % 8); break;
        case 1: text.insert(at, inserts[rng() % std::size(inserts)]); break;
        default: text[at] = char(32 + rng() % 95); break;
      }
      if (text.empty()) text = "x";
    }
    try {
      Model m = read_mps(text, "fuzz.mps");
      EXPECT_NO_THROW(m.validate()) << text;
    } catch (const InputError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("fuzz.mps:"));
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
}

TEST(MpsReader, ManyLinesReadInLinearTime) {
  // 200k rows and columns: a quadratic step anywhere would make this test crawl.
  std::string text = "NAME big\nROWS\n N obj\n";
  const int n = 200000;
  for (int r = 0; r < n; ++r) text += " L r" + std::to_string(r) + "\n";
  text += " N spare\nCOLUMNS\n";
  for (int j = 0; j < n; ++j)
    text += " x" + std::to_string(j) + " r" + std::to_string(j) + " 1 obj 1\n";
  text += "RHS\n";
  for (int r = 0; r < n; ++r) text += " RHS r" + std::to_string(r) + " 1\n";
  text += "ENDATA\n";
  Model m = read_mps(text);
  EXPECT_EQ(m.num_rows(), n);
  EXPECT_EQ(m.num_vars(), n);
  EXPECT_EQ(m.num_nonzeros(), n);
}

}  // namespace
}  // namespace trex::lp
