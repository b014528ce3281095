#include <gtest/gtest.h>

#include <string>

#include "trex/lp/lp_format.h"
#include "trex/util/error.h"

namespace trex::lp {
namespace {

// The error message of reading `text`, or "" when it reads.
std::string read_error(const std::string& text) {
  try {
    read_lp(text, "bad.lp");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LpReader, ReadsGurobiStyleFileWithBracketsAndQuadraticObjective) {
  Model m = read_lp(R"(\ Model portfolio
\ LP format - for model browsing.
Maximize
  7 x[0] + 2 x[1] + [ 4 x[0] * x[1] + 6 x[1] ^ 2 ] / 2
Subject To
 budget: 3 x[0] + x[1] <= 10
 availability_0: x[0] <= 4
Bounds
End
)");
  EXPECT_EQ(m.sense, Sense::kMaximize);
  ASSERT_EQ(m.num_vars(), 2);
  EXPECT_EQ(m.var(0).name, "x[0]");
  EXPECT_EQ(m.var(0).cost, 7);
  ASSERT_EQ(m.objective_quad.size(), 2u);
  EXPECT_EQ(m.objective_quad[0], (QuadTerm{0, 1, 2.0}));
  EXPECT_EQ(m.objective_quad[1], (QuadTerm{1, 1, 3.0}));
  ASSERT_EQ(m.num_rows(), 2);
  EXPECT_EQ(m.row(0).name, "budget");
  EXPECT_EQ(m.row(0).upper, 10);
  EXPECT_EQ(m.row(0).lower, -kInf);
}

TEST(LpReader, SectionSpellingsAreCaseInsensitive) {
  for (const char* obj : {"MINIMIZE", "minimise", "Minimum", "min"}) {
    for (const char* st : {"Subject To", "such that", "st", "S.T.", "st."}) {
      std::string text = std::string(obj) + "\n x + y\n" + st + "\n c: x + y >= 1\nBOUNDS\nx <= 3\nEnd\n";
      Model m = read_lp(text);
      EXPECT_EQ(m.sense, Sense::kMinimize) << text;
      EXPECT_EQ(m.num_rows(), 1) << text;
      EXPECT_EQ(m.var(0).upper, 3) << text;
    }
  }
  for (const char* obj : {"Maximize", "MAXIMISE", "maximum", "Max"})
    EXPECT_EQ(read_lp(std::string(obj) + "\n x\nst\n x <= 1\nend\n").sense, Sense::kMaximize);
}

TEST(LpReader, CommentsLineAndBlock) {
  Model m = read_lp(R"(\* a block
comment spanning lines *\
min \ trailing comment
 obj: 2 x \ another
st
 \* inline *\ c1: x >= 1
end)");
  EXPECT_EQ(m.objective_name, "obj");
  EXPECT_EQ(m.var(0).cost, 2);
  EXPECT_EQ(m.row(0).lower, 1);
}

TEST(LpReader, IntegerAndBinarySections) {
  for (const char* gen : {"General", "Generals", "GEN", "Integers"}) {
    for (const char* bin : {"Binary", "Binaries", "bin"}) {
      Model m = read_lp(std::string("max\n x + y + z\nst\n x + y + z <= 5.5\nbounds\n x <= 10\n y <= 7\n") +
                        gen + "\n x\n" + bin + "\n y\nend\n");
      EXPECT_EQ(m.var(0).type, VarType::kInteger);
      EXPECT_EQ(m.var(0).upper, 10);
      EXPECT_EQ(m.var(1).type, VarType::kBinary);
      EXPECT_EQ(m.var(1).upper, 1);  // binary bounds win over the earlier y <= 7
      EXPECT_EQ(m.var(2).type, VarType::kContinuous);
    }
  }
}

TEST(LpReader, BoundForms) {
  Model m = read_lp(R"(min
 a + b + c + d + e + f + g + h
st
 r: a + b + c + d + e + f + g + h >= -100
bounds
 a free
 -inf <= b <= 5
 c = 3.5
 d >= -infinity
 -2 <= e <= 1e30
 4 >= f
 g <= 1e+30
 -10 <= g
 h >= -1e30
 h <= +inf
end)");
  auto b = [&](const char* n) { return m.var(m.find_var(n)); };
  EXPECT_EQ(b("a").lower, -kInf);
  EXPECT_EQ(b("a").upper, kInf);
  EXPECT_EQ(b("b").lower, -kInf);
  EXPECT_EQ(b("b").upper, 5);
  EXPECT_EQ(b("c").lower, 3.5);
  EXPECT_EQ(b("c").upper, 3.5);
  EXPECT_EQ(b("d").lower, -kInf);
  EXPECT_EQ(b("e").lower, -2);
  EXPECT_EQ(b("e").upper, kInf);
  EXPECT_EQ(b("f").upper, 4);
  EXPECT_EQ(b("g").lower, -10);
  EXPECT_EQ(b("g").upper, kInf);
  EXPECT_EQ(b("h").lower, -kInf);
  EXPECT_EQ(b("h").upper, kInf);
}

TEST(LpReader, UpperBoundOfMinusInfinityIsAnError) {
  EXPECT_NE(read_error("min\n x\nst\n x >= 1\nbounds\n x <= -1e30\nend\n"), "");
}

TEST(LpReader, RangedRowsConstantsAndMultilineRows) {
  Model m = read_lp(R"(minimize
 cost: 3 x + 2 y + 10
subject to
 range: -5 <= x - y <= 8
 rev: 8 >= x + y >= 2
 lhs_constant: x + 4 <= 9
 multi: 2 x
   + 3 y
   >= 6
 eq: x + y = 4
 - x - y >= -20
end)");
  EXPECT_EQ(m.objective_constant, 10);
  EXPECT_EQ(m.row(0).lower, -5);
  EXPECT_EQ(m.row(0).upper, 8);
  EXPECT_EQ(m.row(1).lower, 2);
  EXPECT_EQ(m.row(1).upper, 8);
  EXPECT_EQ(m.row(2).upper, 5);
  EXPECT_EQ(m.row(3).terms.size(), 2u);
  EXPECT_EQ(m.row(4).lower, 4);
  EXPECT_EQ(m.row(4).upper, 4);
  EXPECT_EQ(m.row(5).name, "c6");  // unnamed rows are numbered
  EXPECT_EQ(m.row(5).lower, -20);
}

TEST(LpReader, GurobiEmptyRowsConstantsAndRepeatedNames) {
  Model m = read_lp(R"(Minimize
  + 10000 Constant + x
Subject To
 R0: <= 10000
 dup: x >= 1
 dup: x >= 2
 dup: x <= 9
Bounds
End
)");
  EXPECT_EQ(m.objective_constant, 10000);
  EXPECT_EQ(m.num_vars(), 1);
  EXPECT_TRUE(m.row(0).terms.empty());
  EXPECT_EQ(m.row(0).upper, 10000);
  EXPECT_EQ(m.row(1).name, "dup");
  EXPECT_EQ(m.row(2).name, "dup#2");
  EXPECT_EQ(m.row(3).name, "dup#3");
}

TEST(LpReader, QuadraticRowsAndDuplicateTermsMerge) {
  Model m = read_lp("min\n x + y\nst\n q: x + x + [ x * y + 2 y ^ 2 - y * x ] <= 4\nend\n");
  ASSERT_EQ(m.row(0).terms.size(), 1u);
  EXPECT_EQ(m.row(0).terms[0].coef, 2);
  ASSERT_EQ(m.row(0).quad.size(), 1u);  // x*y - y*x cancels and is dropped
  EXPECT_EQ(m.row(0).quad[0], (QuadTerm{1, 1, 2.0}));
}

TEST(LpReader, NamesWithOddCharacters) {
  Model m = read_lp("min\n flow[a,b] + y(1).z + _q#2 + x[i][j]\nst\n c.1: flow[a,b] >= 1\nend\n");
  EXPECT_EQ(m.var(0).name, "flow[a,b]");
  EXPECT_EQ(m.var(1).name, "y(1).z");
  EXPECT_EQ(m.var(2).name, "_q#2");
  EXPECT_EQ(m.var(3).name, "x[i][j]");
  EXPECT_EQ(m.row(0).name, "c.1");
}

TEST(LpReader, NumbersInAllForms) {
  Model m = read_lp("min\n 1.5e3 a + .25 b + 2. c - 3E-2 d + 4 * e\nst\n a >= 1e-400\nend\n");
  EXPECT_EQ(m.var(0).cost, 1500);
  EXPECT_EQ(m.var(1).cost, 0.25);
  EXPECT_EQ(m.var(2).cost, 2);
  EXPECT_EQ(m.var(3).cost, -0.03);
  EXPECT_EQ(m.var(4).cost, 4);
  EXPECT_EQ(m.row(0).lower, 0);  // underflow reads as 0
}

TEST(LpReader, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"", "bad.lp:1: empty file"},
      {"\\ only a comment\n", "empty file"},
      {"min\n x\nst\n c: x >= 1e400\nend\n", "bad.lp:4: number out of range"},
      {"min\n x\nst\n c: x >= 1\n c2: x y >= 2\nend\n", "bad.lp:5:"},
      {"min\n x\nst\n c: x >= 1\nfoo\n", "unexpected end of file"},
      {"min\n x\nst\n c: x >= 1\nbounds\n x >= 5\n x <= 2\nend\n", "bad.lp:7: variable 'x': lower bound 5"},
      {"min\n x\nst\n c: x >= 1\nbounds\n 3 <= x <= 2\nend\n", "bad.lp:6:"},
      {"min\n x\nst\n c: x >= 1\nsemi-continuous\n x\nend\n", "bad.lp:6: semi-continuous variable 'x' needs a finite upper bound"},
      {"min\n x\nst\n c: x >= 1\nbounds\n x <= 4\ngeneral\n x\nsemi\n x\nend\n", "bad.lp:10: variable 'x' is semi-continuous and integer"},
      {"min\n x\nst\n c: x >= 1\nsos\n s1: x:1\nend\n", "bad.lp:6: an SOS set needs its type"},
      {"min\n x\nst\n c: x >= 1\nsos\n s1: S1:: x:1 y:2\nend\n", "bad.lp:6: SOS set 's1' names unknown variable 'y'"},
      {"min\n x\nst\n c: x >= 1\nsos\n s1: S1:: x:1 x:2\nend\n", "bad.lp:6: SOS set 's1' names 'x' twice"},
      {"min\n x\nst\n c: x >= 1\nsos\n s1: S1::\nend\n", "bad.lp:6: SOS set 's1' has no members"},
      {"min\n x ^ 2\nst\n c: x >= 1\nend\n", "bad.lp:2: quadratic terms must be written inside"},
      {"min\n [ x * y \nst\n c: x >= 1\nend\n", "bad.lp:"},
      {"st\n c: x >= 1\nend\n", "bad.lp:1: expected Minimize or Maximize"},
      {"min\n x\nst\n c: x >= \nend\n", "bad.lp:5: expected a number"},
      {"min\n x\nst\n c: b = 1 -> x >= 1\nend\n", "indicator constraints are not supported"},
      {"min\n x\nst\n c: x >= 1\nbounds\n x = inf\nend\n", "bad.lp:6:"},
      {"min\n x\nst\n c: x = inf\nend\n", "bad.lp:4:"},
      {"min\n x\nst\n c: x >= 1\n\x01\x02\nend\n", "bad.lp:5: binary data"},
      {"min\n x\nmin\n y\nend\n", "bad.lp:3: second objective"},
      {"min\n x ->\nst\n c: x >= 1\nend\n", "bad.lp:2: unexpected '->'"},  // once looped forever
  };
  for (const Case& c : cases) {
    std::string err = read_error(c.text);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "input:\n" << c.text << "\nerror: " << err;
  }
}

TEST(LpReader, LongLinesFailFastAndCleanly) {
  std::string huge(20 << 20, 'a');
  std::string err = read_error("min\n" + huge + "\nend\n");
  EXPECT_NE(err.find("bad.lp:2: name longer than 255"), std::string::npos) << err.substr(0, 200);
  std::string junk(20 << 20, '@');
  err = read_error("min\n x\nst\n" + junk + "\n");
  EXPECT_NE(err.find("bad.lp:4:"), std::string::npos) << err.substr(0, 200);
}

TEST(LpReader, ALongValidRowReadsInLinearTime) {
  std::string row = "min\n obj: x0\nst\n big:";
  for (int k = 0; k < 200000; ++k) row += " + " + std::to_string(k % 7 + 1) + " x" + std::to_string(k);
  row += " <= 1\nend\n";
  Model m = read_lp(row);
  EXPECT_EQ(m.num_vars(), 200000);
  EXPECT_EQ(m.row(0).terms.size(), 200000u);
}

}  // namespace
}  // namespace trex::lp
