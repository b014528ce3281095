// ORGEval as trex scores it: a fixed variable is a constant, and numbers one ulp apart are
// one number, where lp/structure alone (40-bit rounding, no folding) calls such pairs
// different.
#include "trex/oreval/orgeval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trex/lp/lp_format.h"
#include "trex/lp/structure.h"

namespace trex::oreval {
namespace {

lp::Model knapsack(double c0 = 3) {
  lp::Model m;
  m.sense = lp::Sense::kMaximize;
  int x = m.add_var("x", 0, 4, lp::VarType::kInteger, c0);
  int y = m.add_var("y", 0, 4, lp::VarType::kInteger, 2);
  int z = m.add_var("z", 0, lp::kInf, lp::VarType::kContinuous, 1);
  m.add_row("c1", {{x, 1}, {y, 1}, {z, 1}}, -lp::kInf, 5);
  m.add_row("c2", {{x, 2}, {z, -1}}, -lp::kInf, 3);
  return m;
}

TEST(Orgeval, GurobiConstantEqualsAnObjectiveConstant) {
  lp::Model plain = knapsack();
  plain.objective_constant = 7;
  // Gurobi's writer: the constant as a variable "Constant" fixed at 1 with cost 7.
  lp::Model written = lp::read_lp(
      "Maximize\n obj: 3 x + 2 y + z + 7 Constant\nSubject To\n c1: x + y + z <= 5\n c2: 2 x - z <= 3\n"
      "Bounds\n x <= 4\n y <= 4\n Constant = 1\nGenerals\n x y\nEnd\n",
      "written.lp");
  std::string why;
  EXPECT_TRUE(orgeval_equivalent(plain, written, &why)) << why;
  // A variable fixed by a row and used in other rows is a constant too.
  lp::Model by_row = knapsack();
  int f = by_row.add_var("f", -lp::kInf, lp::kInf, lp::VarType::kContinuous, 0);
  by_row.add_row("fix", {{f, 2}}, 6, 6);  // f = 3
  by_row.row(0).terms.push_back({f, 1});  // x + y + z + f <= 8  is  x + y + z <= 5
  by_row.row(0).upper = 8;
  EXPECT_TRUE(orgeval_equivalent(knapsack(), by_row, &why)) << why;
  // But a different constant is a different objective.
  lp::Model other = knapsack();
  other.objective_constant = 8;
  EXPECT_FALSE(orgeval_equivalent(plain, other, &why));
  EXPECT_EQ(why, "objective constants differ");
}

TEST(Orgeval, ValuesOneUlpApartMatch) {
  // A value on a 40-bit rounding boundary: it and its neighbour one ulp below round apart.
  const double v = std::ldexp(double((int64_t(1) << 40) + 12345) + 0.5, -41);
  const double below = std::nextafter(v, 0.0);
  EXPECT_FALSE(lp::structurally_equivalent(knapsack(v), knapsack(below)));  // the old bucketing
  std::string why;
  EXPECT_TRUE(orgeval_equivalent(knapsack(v), knapsack(below), &why)) << why;
  EXPECT_TRUE(orgeval_equivalent(knapsack(1e6), knapsack(1e6 * (1 + 5e-10)), &why)) << why;  // within 1e-9
  EXPECT_FALSE(orgeval_equivalent(knapsack(1e6), knapsack(1e6 * (1 + 1e-8)), &why));           // beyond it
  EXPECT_FALSE(orgeval_equivalent(knapsack(3), knapsack(-3)));
}

TEST(Orgeval, FixedIntegerAtAFractionIsNotFolded) {
  lp::Model a = knapsack();
  int g = a.add_var("g", 0.5, 0.5, lp::VarType::kInteger, 1);  // infeasible: must not vanish
  (void)g;
  EXPECT_FALSE(orgeval_equivalent(a, knapsack()));
}

}  // namespace
}  // namespace trex::oreval
