// The quality gates one by one: the reviewer, the certificate, the gurobipy round trip, and
// each rejection reason on a sample that was broken on purpose.
#include <gtest/gtest.h>

#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"
#include "trex/ordata/builder.h"
#include "trex/ordata/certificate.h"
#include "trex/ordata/checks.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/render.h"
#include "trex/util/error.h"

namespace trex::ordata {
namespace {

Instance make(const std::string& family, uint64_t seed, FeasibilityMode mode = FeasibilityMode::kFeasible) {
  const Family* f = find_family(family);
  Rng rng(seed);
  return f->generate(default_ranges(f->contract()), mode, 0, rng);
}

TEST(StatedNumbers, TokensNotWordsOrListMarkers) {
  auto n = stated_numbers("Ship 12 m3 of gas at 2.5 $ per unit.\n2. Use 7 trucks, not x9 or 9b.\n");
  EXPECT_EQ(n, (std::set<double>{12, 2.5, 7}));
}

TEST(NumberSpans, EachNumberInOrderWithItsTextAndListMarkersFlagged) {
  const std::string text = "1. Ship 12 m3 at 2.5, not x_9.\n3. Then 0.75 of 40.";
  std::vector<std::string> numbers;
  std::vector<bool> markers;
  for (const NumberSpan& n : number_spans(text)) {
    numbers.push_back(text.substr(n.begin, n.end - n.begin));
    markers.push_back(n.list_marker);
  }
  EXPECT_EQ(numbers, (std::vector<std::string>{"1", "12", "2.5", "3", "0.75", "40"}));
  EXPECT_EQ(markers, (std::vector<bool>{true, false, false, true, false, false}));
  EXPECT_EQ(stated_numbers(text), (std::set<double>{12, 2.5, 0.75, 40}));
}

TEST(Reviewer, CatchesUnstatedAndUnusedNumbers) {
  Instance inst = make("knapsack", 3);
  std::string text = render_statement(inst.story, 0, false), detail;
  EXPECT_EQ(review_numbers(text, inst.model, {}, &detail), "");
  EXPECT_EQ(review_numbers(text + "Also note 123457.\n", inst.model, {}, &detail), reason::kUnusedNumber);
  lp::Model changed = inst.model;
  changed.var(0).cost = 987654;
  EXPECT_EQ(review_numbers(text, changed, {}, &detail), reason::kUnstatedCoefficient);
  EXPECT_NE(detail.find("987654"), std::string::npos);
}

TEST(Certificate, LpDualsProveOptimalityAndCatchAChangedCost) {
  Instance inst = make("transportation", 11);
  auto solver = lp::make_solver("cbc");
  lp::SolveResult r = solver->solve(inst.model, {});
  ASSERT_EQ(r.status, lp::SolveStatus::kOptimal);
  std::vector<double> y;
  ASSERT_TRUE(lp_row_duals(inst.model, &y));
  EXPECT_EQ(check_optimality_certificate(inst.model, r.objective, r.x, &y), "");
  // A cheaper route makes the old plan suboptimal although still feasible: re-solving would
  // find a better objective, and the dual certificate must fail too.
  lp::Model cheaper = inst.model;
  int j = 0;
  while (r.x[size_t(j)] != 0) ++j;  // an unused route
  cheaper.var(j).cost = 0;
  double obj = cheaper.objective_value(r.x);
  EXPECT_LT(solver->solve(cheaper, {}).objective, obj - 1e-6);
  EXPECT_NE(check_optimality_certificate(cheaper, obj, r.x, &y), "");
  // A wrong objective and an infeasible point fail without duals.
  EXPECT_NE(check_optimality_certificate(inst.model, r.objective + 1, r.x, nullptr), "");
  std::vector<double> bad = r.x;
  bad[0] += 1000;
  EXPECT_NE(check_optimality_certificate(inst.model, inst.model.objective_value(bad), bad, nullptr), "");
}

TEST(Certificate, MaximizedLpToo) {
  Instance inst = make("product_mix", 5);
  lp::SolveResult r = lp::make_solver("cbc")->solve(inst.model, {});
  ASSERT_EQ(r.status, lp::SolveStatus::kOptimal);
  std::vector<double> y;
  ASSERT_TRUE(lp_row_duals(inst.model, &y));
  EXPECT_EQ(check_optimality_certificate(inst.model, r.objective, r.x, &y), "");
}

TEST(Gurobipy, EveryFamilyRoundTrips) {
  for (const Family* f : all_families())
    for (FeasibilityMode mode : f->contract().modes) {
      Rng rng(99);
      Instance inst = f->generate(default_ranges(f->contract()), mode, 2, rng);
      std::string program = write_gurobipy(inst.model), why;
      EXPECT_TRUE(lp::same_model(inst.model, read_gurobipy(program), &why)) << f->contract().family << ": " << why;
      EXPECT_NE(program.find("m.optimize()"), std::string::npos);
    }
}

TEST(Gurobipy, ReaderNamesTheLine) {
  std::string program = "import gurobipy as gp\nm = gp.Model(\"x\")\nx = m.addVar(lb=0, ub=1, vtype=GRB.BINARY, name=\"x\")\n"
                        "m.setObjective(2 * x, GRB.MAXIMIZE)\nm.addConstr(2 * y <= 1, name=\"c\")\n";
  try {
    read_gurobipy(program);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 5);
    EXPECT_NE(std::string(e.what()).find("unknown variable y"), std::string::npos);
  }
}

// Breaks one thing in an otherwise good sample and expects the named reason.
class BrokenSample : public ::testing::Test {
 protected:
  void SetUp() override {
    inst = make("diet", 21);
    ref = lp::make_solver("cbc")->solve(inst.model, {});
    ASSERT_EQ(ref.status, lp::SolveStatus::kOptimal);
    ASSERT_TRUE(lp_row_duals(inst.model, &duals));
    s.statement = render_statement(inst.story, 1, false);
    s.formulations = reconstruct(inst.model, inst.story);
  }
  std::string run() {
    Reference r{&inst.model, ref.status, ref.objective, &ref.x, &duals};
    run_checks(inst, r, *lp::make_solver("cbc"), s);
    return s.rejection;
  }
  Instance inst;
  lp::SolveResult ref;
  std::vector<double> duals;
  Sample s;
};

TEST_F(BrokenSample, GoodSamplePassesEveryCheck) {
  EXPECT_EQ(run(), "") << s.rejection_detail;
  EXPECT_EQ(s.checks.size(), 7u);
}
TEST_F(BrokenSample, LpThatDoesNotParse) {
  s.formulations.lp = "Minimize\n obj: 3 x +\nSubject To\n c: x >= \nEnd\n";
  EXPECT_EQ(run(), reason::kLpParse);
}
TEST_F(BrokenSample, GurobipyThatDoesNotParse) {
  s.formulations.gurobipy += "m.addGenConstrMax(z, [x, y])\n";
  EXPECT_EQ(run(), reason::kGurobipyParse);
}
TEST_F(BrokenSample, WrongVariableTypeBreaksTheContract) {
  lp::Model m = inst.model;
  m.var(0).type = lp::VarType::kInteger;
  s.formulations.lp = lp::write_lp(m);
  EXPECT_EQ(run(), reason::kContract);
}
TEST_F(BrokenSample, FlippedDirection) {
  lp::Model m = inst.model;
  m.sense = lp::Sense::kMaximize;
  s.formulations.lp = lp::write_lp(m);
  EXPECT_EQ(run(), reason::kDirection);
}
TEST_F(BrokenSample, StatementWithoutADatum) {
  std::string n = num(inst.model.var(0).cost);
  size_t at = s.statement.find(" " + n);
  ASSERT_NE(at, std::string::npos);
  s.statement.replace(at + 1, n.size(), "some");
  EXPECT_EQ(run(), reason::kUnstatedCoefficient);
}
TEST_F(BrokenSample, LeakedAnswer) {
  s.statement += "Hint: the optimal value is known.\n";
  EXPECT_EQ(run(), reason::kAnswerLeak);
}
TEST_F(BrokenSample, ChangedRightHandSideIsResolvedAndDisagrees) {
  lp::Model m = inst.model;
  m.row(0).lower *= 0.5;  // a different (still feasible) model: re-solved, other objective
  s.formulations.lp = lp::write_lp(m);
  s.statement += "(Note: " + num(m.row(0).lower) + " also appears.)\n";  // keep the reviewer quiet
  std::string why = run();
  EXPECT_TRUE(why == reason::kObjectiveMismatch || why == reason::kUnusedNumber) << why << " " << s.rejection_detail;
}

TEST(Builder, SamplesAreDeterministicAndIndependentOfOrder) {
  CorpusConfig c = default_config();
  finalize_config(c);
  SampleBuilder a(c), b(c);
  StageTimes t;
  Sample s7 = a.build(7, t);
  a.build(3, t);
  Sample again = b.build(7, t);
  EXPECT_EQ(s7.statement, again.statement);
  EXPECT_EQ(s7.formulations.lp, again.formulations.lp);
  EXPECT_EQ(s7.objective, again.objective);
  EXPECT_EQ(s7.id, again.id);
}

}  // namespace
}  // namespace trex::ordata
