// ORGEval structural equivalence: small models built by hand, then every Bench4Opt reference
// LP against itself, against renamed and shuffled copies (equivalent), and against perturbed
// copies (not equivalent).
#include "trex/lp/structure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

#include "trex/lp/lp_format.h"
#include "trex/lp/model_file.h"
#include "trex/util/data_dir.h"

namespace trex::lp {
namespace {

Model knapsack() {
  Model m;
  m.sense = Sense::kMaximize;
  int a = m.add_var("a", 0, 1, VarType::kBinary, 5);
  int b = m.add_var("b", 0, 1, VarType::kBinary, 4);
  int c = m.add_var("c", 0, 10, VarType::kContinuous, 3);
  m.add_le("cap", {{a, 2}, {b, 3}, {c, 1}}, 5);
  m.add_ge("mix", {{a, 1}, {c, -1}}, -2);
  return m;
}

std::string why_not(const Model& a, const Model& b) {
  std::string why;
  EXPECT_FALSE(structurally_equivalent(a, b, &why));
  return why;
}

TEST(Structure, ModelEqualsItself) {
  EXPECT_TRUE(structurally_equivalent(knapsack(), knapsack()));
  EXPECT_EQ(structure_hash(knapsack()), structure_hash(knapsack()));
}

TEST(Structure, NamesAndOrderDoNotMatter) {
  Model m;
  m.sense = Sense::kMaximize;
  int c = m.add_var("z3", 0, 10, VarType::kContinuous, 3);
  int b = m.add_var("z2", 0, 1, VarType::kBinary, 4);
  int a = m.add_var("z1", 0, 1, VarType::kBinary, 5);
  m.add_ge("r2", {{c, -1}, {a, 1}}, -2);
  m.add_le("r1", {{c, 1}, {b, 3}, {a, 2}}, 5);
  EXPECT_TRUE(structurally_equivalent(knapsack(), m));
}

TEST(Structure, SingleVariableRowsAreBounds) {
  Model m;
  m.sense = Sense::kMaximize;
  int a = m.add_var("a", 0, kInf, VarType::kInteger, 5);  // binary written as integer + rows
  int b = m.add_var("b", 0, 1, VarType::kBinary, 4);
  int c = m.add_var("c", 0, kInf, VarType::kContinuous, 3);
  m.add_le("a_up", {{a, 1}}, 1);
  m.add_ge("c_up", {{c, -2}}, -20);  // -2c >= -20, i.e. c <= 10
  m.add_row("empty", {}, -kInf, 0);   // Gurobi's "R: <= 0"
  m.add_le("cap", {{a, 2}, {b, 3}, {c, 1}}, 5);
  m.add_ge("mix", {{a, 1}, {c, -1}}, -2);
  EXPECT_TRUE(structurally_equivalent(knapsack(), m));
  EXPECT_EQ(structure_signature(m).num_bound_rows, 2);
}

TEST(Structure, NegatedRowIsTheSameRow) {
  Model m = knapsack();
  m.row(1) = Constraint{"mix", -kInf, 2, {{0, -1}, {2, 1}}, {}};  // -a + c <= 2
  EXPECT_TRUE(structurally_equivalent(knapsack(), m));
}

TEST(Structure, SelfSymmetricRowsMatchEitherWay) {
  auto build = [](double sign) {
    Model m;
    int x = m.add_var("x", 0, 4, VarType::kContinuous, 1);
    int y = m.add_var("y", 0, 6, VarType::kContinuous, 2);
    m.add_eq("bal", {{x, sign}, {y, -sign}}, 0);
    return m;
  };
  EXPECT_TRUE(structurally_equivalent(build(1), build(-1)));
}

TEST(Structure, DifferencesAreFoundAndNamed) {
  Model m = knapsack();
  m.row(0).terms[1].coef = 3.5;
  EXPECT_NE(why_not(knapsack(), m).find("coefficients"), std::string::npos);

  m = knapsack();
  m.row(0).upper = 6;
  EXPECT_NE(why_not(knapsack(), m).find("right-hand sides"), std::string::npos);

  m = knapsack();
  m.var(2).type = VarType::kInteger;
  EXPECT_NE(why_not(knapsack(), m).find("integer variables"), std::string::npos);

  m = knapsack();
  m.sense = Sense::kMinimize;
  EXPECT_NE(why_not(knapsack(), m).find("sense"), std::string::npos);

  m = knapsack();
  m.add_var("only_in_objective", 0, kInf, VarType::kContinuous, 1);
  EXPECT_NE(why_not(knapsack(), m).find("variables: 3 against 4"), std::string::npos);

  m = knapsack();
  m.var(1).cost = 4.5;
  EXPECT_NE(why_not(knapsack(), m).find("objective coefficients"), std::string::npos);
}

// Same counts, features and coefficients, different wiring: only refinement tells them apart.
TEST(Structure, WiringDifferenceNeedsRefinement) {
  auto build = [](bool cross) {
    Model m;
    int x1 = m.add_var("x1", 0, kInf, VarType::kContinuous, 1);
    int x2 = m.add_var("x2", 0, kInf, VarType::kContinuous, 1);
    int y1 = m.add_var("y1", 0, kInf, VarType::kContinuous, 2);
    int y2 = m.add_var("y2", 0, kInf, VarType::kContinuous, 2);
    m.add_ge("r1", {{x1, 1}, {cross ? y2 : y1, 3}}, 1);
    m.add_ge("r2", {{x2, 1}, {cross ? y1 : y2, 3}}, 1);
    m.add_ge("r3", {{x1, 1}, {y1, 3}}, 1);
    return m;
  };
  std::string why = why_not(build(false), build(true));
  EXPECT_NE(why.find("WL refinement separates them at round"), std::string::npos) << why;
}

TEST(Structure, QuadraticTermsCount) {
  Model a = knapsack(), b = knapsack();
  a.add_objective_quad(0, 2, 1.5);
  b.add_objective_quad(1, 2, 1.5);
  EXPECT_FALSE(structurally_equivalent(a, b));
  Model c = knapsack();
  c.add_objective_quad(0, 2, 1.5);
  EXPECT_TRUE(structurally_equivalent(a, c));
}

// Gurobi's LP writer drops variables used nowhere and writes an objective constant as a
// variable "Constant" fixed at 1; neither changes the problem.
TEST(Structure, IsolatedVariablesDoNotCount) {
  Model m = knapsack();
  m.add_var("declared_but_unused", 0, 5);
  m.add_var("fixed_and_unused", 2, 2);
  EXPECT_TRUE(structurally_equivalent(knapsack(), m));
  EXPECT_EQ(structure_signature(m).num_dropped_vars, 2);

  Model with_constant = read_lp("Minimize\n x + 2 y + 7 Constant\nSubject To\n r: x + y >= 1\nBounds\n Constant = 1\nEnd\n");
  Model plain = read_lp("Minimize\n x + 2 y + 7\nSubject To\n r: x + y >= 1\nEnd\n");
  std::string why;
  EXPECT_TRUE(structurally_equivalent(with_constant, plain, &why)) << why;

  Model infeasible = knapsack();
  infeasible.add_var("empty_domain", 3, 2);
  EXPECT_FALSE(structurally_equivalent(knapsack(), infeasible));
}

TEST(Structure, LastDigitsDoNotMatter) {
  Model m = knapsack();
  m.row(0).terms[0].coef = 2.0000000000000004;
  EXPECT_TRUE(structurally_equivalent(knapsack(), m));
}

// --- Bench4Opt -----------------------------------------------------------------------------

// A copy with every variable and row renamed, both orders shuffled, the terms of each row
// shuffled, about half the rows negated, and every bound written as a row.
Model shuffled_copy(const Model& m, std::mt19937& rng) {
  std::vector<int> vperm(size_t(m.num_vars())), rperm(size_t(m.num_rows()));
  std::iota(vperm.begin(), vperm.end(), 0);
  std::iota(rperm.begin(), rperm.end(), 0);
  std::shuffle(vperm.begin(), vperm.end(), rng);
  std::shuffle(rperm.begin(), rperm.end(), rng);
  std::vector<int> new_index(vperm.size());
  Model out;
  out.sense = m.sense;
  out.objective_constant = m.objective_constant;
  for (size_t k = 0; k < vperm.size(); ++k) {
    const Variable& v = m.var(vperm[k]);
    new_index[size_t(vperm[k])] = out.add_var("v" + std::to_string(k), v.lower, v.upper, v.type, v.cost);
  }
  for (const QuadTerm& q : m.objective_quad) out.add_objective_quad(new_index[size_t(q.i)], new_index[size_t(q.j)], q.coef);
  for (size_t k = 0; k < rperm.size(); ++k) {
    const Constraint& row = m.row(rperm[k]);
    std::vector<Term> terms;
    bool negate = rng() % 2 == 1 && row.quad.empty();
    for (const Term& t : row.terms) terms.push_back({new_index[size_t(t.var)], negate ? -t.coef : t.coef});
    std::shuffle(terms.begin(), terms.end(), rng);
    std::vector<QuadTerm> quad;
    for (const QuadTerm& q : row.quad) {
      int i = new_index[size_t(q.i)], j = new_index[size_t(q.j)];
      quad.push_back({std::min(i, j), std::max(i, j), q.coef});
    }
    out.add_row("r" + std::to_string(k), terms, negate ? -row.upper : row.lower, negate ? -row.lower : row.upper, quad);
  }
  // Bounds as rows: a finite upper bound becomes "x <= u" with x's bound relaxed.
  for (int j = 0; j < out.num_vars(); ++j) {
    Variable& v = out.var(j);
    if (v.type != VarType::kBinary && v.upper != kInf) {
      out.add_le("b" + std::to_string(j), {{j, 1}}, v.upper);
      v.upper = kInf;
    }
  }
  return out;
}

// A copy that differs in one place, chosen by the seed: a coefficient, a right-hand side, a
// variable type or an objective coefficient.
Model perturbed_copy(const Model& m, std::mt19937& rng, std::string* what) {
  Model out = m;
  std::vector<int> multi;
  for (int r = 0; r < m.num_rows(); ++r)
    if (m.row(r).terms.size() >= 2) multi.push_back(r);
  int kind = int(rng() % 4);
  if (multi.empty()) kind = 3;
  if (kind == 0) {
    Constraint& row = out.row(multi[rng() % multi.size()]);
    Term& t = row.terms[rng() % row.terms.size()];
    t.coef = t.coef * 1.5 + (t.coef >= 0 ? 0.25 : -0.25);  // never 0, never the same
    *what = "coefficient in " + row.name;
  } else if (kind == 1) {
    Constraint& row = out.row(multi[rng() % multi.size()]);
    double& bound = row.upper != kInf ? row.upper : row.lower;
    bound += 1 + 0.01 * std::fabs(bound);
    *what = "right-hand side of " + row.name;
  } else if (kind == 2) {
    // A variable the model uses: an isolated one (Gurobi's "Constant") does not count.
    std::vector<int> used;
    for (const Constraint& row : m.rows())
      for (const Term& t : row.terms) used.push_back(t.var);
    for (int j = 0; j < m.num_vars(); ++j)
      if (m.var(j).cost != 0) used.push_back(j);
    if (used.empty()) used.push_back(0);
    Variable& v = out.var(used[rng() % used.size()]);
    v.type = v.type == VarType::kContinuous ? VarType::kInteger : VarType::kContinuous;
    *what = "type of " + v.name;
  } else {
    Variable& v = out.var(int(rng() % size_t(m.num_vars())));
    v.cost += 1 + 0.01 * std::fabs(v.cost);
    *what = "objective coefficient of " + v.name;
  }
  return out;
}

std::vector<std::string> reference_lps() {
  std::vector<std::string> files;
  for (const char* split : {"or-benchmarks/bench4opt/slai_trex/bench4opt_feasible/lp_code",
                            "or-benchmarks/bench4opt/slai_trex/bench4opt/lp_code"}) {
    std::string dir = find_data(split);
    if (dir.empty()) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".lp") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(StructureBench4Opt, EveryReferenceLp) {
  std::vector<std::string> files = reference_lps();
  if (files.empty()) GTEST_SKIP() << "Bench4Opt data not found under " << data_dir();
  EXPECT_EQ(files.size(), 344u + 394u);
  int checked = 0;
  for (const std::string& path : files) {
    Model m = read_model_file(path);
    std::mt19937 rng(uint32_t(std::hash<std::string>()(std::filesystem::path(path).filename().string())));
    std::string why;
    EXPECT_TRUE(structurally_equivalent(m, read_model_file(path), &why)) << path << ": " << why;
    // Through the LP writer and reader, as a completion's model arrives.
    EXPECT_TRUE(structurally_equivalent(m, read_lp(write_lp(m)), &why)) << path << ": " << why;
    EXPECT_TRUE(structurally_equivalent(m, shuffled_copy(m, rng), &why)) << path << ": shuffled: " << why;
    std::string what;
    Model perturbed = perturbed_copy(m, rng, &what);
    EXPECT_FALSE(structurally_equivalent(m, perturbed, &why)) << path << ": perturbed " << what;
    EXPECT_FALSE(structurally_equivalent(shuffled_copy(m, rng), perturbed)) << path << ": perturbed " << what;
    ++checked;
  }
  EXPECT_EQ(checked, int(files.size()));
}

// Distinct reference LPs have distinct hashes. The 738 files hold 281 distinct texts (each
// problem appears in two wordings, and the splits share problems); 280 hashes were measured,
// one pair of files differing only in names. The bound leaves room for such pairs.
TEST(StructureBench4Opt, HashesSeparateProblems) {
  std::vector<std::string> files = reference_lps();
  if (files.empty()) GTEST_SKIP() << "Bench4Opt data not found under " << data_dir();
  std::vector<uint64_t> hashes;
  for (const std::string& path : files) hashes.push_back(structure_hash(read_model_file(path)));
  std::sort(hashes.begin(), hashes.end());
  size_t distinct = size_t(std::unique(hashes.begin(), hashes.end()) - hashes.begin());
  RecordProperty("distinct_hashes", int(distinct));
  EXPECT_GE(distinct, 270u) << distinct << " distinct hashes for " << files.size() << " files";
}

}  // namespace
}  // namespace trex::lp
