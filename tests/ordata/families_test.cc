// Every family, in every feasibility mode its contract allows: the instance is valid, solves
// to the requested status, is deterministic per seed, and its statement states its data.
#include <gtest/gtest.h>

#include <set>

#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"
#include "trex/ordata/checks.h"
#include "trex/ordata/family.h"
#include "trex/ordata/lexicon.h"
#include "trex/ordata/render.h"

namespace trex::ordata {
namespace {

lp::SolveStatus expected(FeasibilityMode m) {
  return m == FeasibilityMode::kFeasible     ? lp::SolveStatus::kOptimal
         : m == FeasibilityMode::kInfeasible ? lp::SolveStatus::kInfeasible
                                             : lp::SolveStatus::kUnbounded;
}

TEST(Families, AtLeastFiftyWithContracts) {
  const auto& fams = all_families();
  EXPECT_GE(fams.size(), 50u);
  int lp = 0, ip = 0, milp = 0;
  for (const Family* f : fams) {
    const Contract& c = f->contract();
    EXPECT_GE(f->industries().size(), 4u) << c.family;
    EXPECT_TRUE(c.supports(FeasibilityMode::kFeasible)) << c.family;
    EXPECT_EQ(c.param("size").role, ParamSpec::Role::kSize) << c.family;
    EXPECT_EQ(c.param("difficulty").role, ParamSpec::Role::kDifficulty) << c.family;
    for (const ParamSpec& p : c.params) {
      EXPECT_LE(p.min, p.lo) << c.family << "." << p.name;
      EXPECT_LE(p.lo, p.hi) << c.family << "." << p.name;
      EXPECT_LE(p.hi, p.max) << c.family << "." << p.name;
    }
    lp += c.problem_class == ProblemClass::kLP;
    ip += c.problem_class == ProblemClass::kIP;
    milp += c.problem_class == ProblemClass::kMILP;
    EXPECT_EQ(find_family(c.family), f);
  }
  EXPECT_GT(lp, 0);
  EXPECT_GT(ip, 0);
  EXPECT_GT(milp, 0);
  EXPECT_EQ(find_family("no_such_family"), nullptr);
}

TEST(Families, EveryModeSolvesAsRequestedInEveryIndustry) {
  auto solver = lp::make_solver("cbc");
  for (const Family* f : all_families()) {
    const Contract& c = f->contract();
    ParamRanges ranges = default_ranges(c);
    for (FeasibilityMode mode : c.modes)
      for (int industry = 0; industry < int(f->industries().size()); ++industry)
        for (uint64_t seed = 0; seed < (industry == 0 ? 3u : 1u); ++seed) {
          Rng rng(seed * 977 + uint64_t(industry));
          Instance inst = f->generate(ranges, mode, industry, rng);
          SCOPED_TRACE(c.family + " " + to_string(mode) + " industry " + std::to_string(industry) + " seed " +
                       std::to_string(seed));
          ASSERT_NO_THROW(inst.model.validate());
          lp::SolveResult r = solver->solve(inst.model, {});
          EXPECT_EQ(r.status, expected(mode)) << r.message;
          EXPECT_EQ(inst.model.is_mip(), c.problem_class != ProblemClass::kLP);
          // The LP text reads back to the same model.
          std::string why;
          EXPECT_TRUE(lp::same_model(inst.model, lp::read_lp(lp::write_lp(inst.model)), &why)) << why;
          // Every template states every number the model uses, and nothing else.
          for (int t = 0; t < kNumTemplates; ++t)
            for (bool concise : {false, true}) {
              std::string detail;
              std::string text = render_statement(inst.story, t, concise);
              EXPECT_EQ(review_numbers(text, inst.model, inst.implied_numbers, &detail), "")
                  << detail << "\n" << text;
            }
        }
  }
}

TEST(Families, LexiconFamiliesSpeakTenIndustriesAndSixTemplates) {
  EXPECT_EQ(kNumTemplates, 6);
  int on_lexicon = 0;
  for (const Family* f : all_families())
    if (f->industries() == lexicon_industries()) ++on_lexicon;
  EXPECT_GE(on_lexicon, 34);
  EXPECT_GE(lexicon_industries().size(), 10u);
  // Every template is distinct text for the same story.
  const Family* f = find_family("unit_commitment");
  Rng rng(5);
  Instance inst = f->generate(default_ranges(f->contract()), FeasibilityMode::kFeasible, 3, rng);
  std::set<std::string> texts;
  for (int t = 0; t < kNumTemplates; ++t) texts.insert(render_statement(inst.story, t, false));
  EXPECT_EQ(texts.size(), size_t(kNumTemplates));
}

TEST(Families, DeterministicPerSeed) {
  for (const Family* f : all_families()) {
    ParamRanges ranges = default_ranges(f->contract());
    Rng a(42), b(42), c(43);
    Instance x = f->generate(ranges, FeasibilityMode::kFeasible, 1, a);
    Instance y = f->generate(ranges, FeasibilityMode::kFeasible, 1, b);
    Instance z = f->generate(ranges, FeasibilityMode::kFeasible, 1, c);
    EXPECT_TRUE(lp::same_model(x.model, y.model)) << f->contract().family;
    EXPECT_EQ(render_statement(x.story, 0, false), render_statement(y.story, 0, false));
    EXPECT_NE(lp::write_lp(x.model), lp::write_lp(z.model)) << f->contract().family;
  }
}

TEST(Families, SizeKnobSetsTheDimension) {
  const Family* f = find_family("knapsack");
  ParamRanges ranges = default_ranges(f->contract());
  ranges["size"] = {3, 3};
  Rng rng(7);
  EXPECT_EQ(f->generate(ranges, FeasibilityMode::kFeasible, 0, rng).model.num_vars(), 3);
  ranges["size"] = {11, 11};
  EXPECT_EQ(f->generate(ranges, FeasibilityMode::kFeasible, 0, rng).model.num_vars(), 11);
}

}  // namespace
}  // namespace trex::ordata
