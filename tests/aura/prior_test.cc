// The skill prior: rules learned from other shapes' observations rule values out before any
// evaluation, "the whole dimension" maps between shapes, and on a space with a known optimum
// (a deterministic synthetic cost, no timing) a search guided by neighbouring shapes' skills
// reaches the optimum in at most half the measurements of the search without them, never
// measuring a ruled-out configuration.
#include "trex/aura/prior.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trex/aura/search.h"
#include "test_grid.h"

namespace trex::aura {
namespace {

// A bowl with its minimum at (a0, b=32, c=5); c = 0 (a "scalar kernel") costs 60% more.
double bowl(const Config& c, double a0) {
  double a = double(c.at("a")), b = double(c.at("b")) / 16, z = double(c.at("c"));
  double v = 1.0 + 0.02 * (a - a0) * (a - a0) + 0.03 * (b - 2) * (b - 2) + 0.02 * (z - 5) * (z - 5) +
             0.01 * std::fabs((a - a0) * (z - 5));
  return z == 0 ? v * 1.6 : v;
}

// A flat model: the search gets no direction from it (as the GEMM model where FMA dominates).
ChoiceProblem flat_model(const TuneTarget& t) {
  ChoiceProblem pr;
  for (const SpaceParam& sp : t.space) pr.params.push_back({sp.name, sp.values, {}, {}, {}, {}});
  return pr;
}

// What a search on a neighbouring shape recorded, relative to the best of it: a spread of the
// space (every seventh configuration) and, as a search's path, every configuration within two
// index steps of that shape's optimum (a = a0, b = 32, c = 5).
Evidence neighbour(const TuneTarget& t, double a0, size_t step = 7) {
  Evidence e;
  e.source = t;
  double best = 1e9;
  std::vector<std::pair<Config, double>> seen;
  std::vector<int> idx(t.space.size(), 0);
  for (size_t i = 0; i < t.size(); ++i) {
    const int near = std::abs(idx[0] - int(a0 - 1)) + std::abs(idx[1] - 1) + std::abs(idx[2] - 5);
    if (i % step == 0 || near <= 2) {
      Config c = t.config_at(idx);
      seen.push_back({c, bowl(c, a0)});
      best = std::min(best, seen.back().second);
    }
    for (size_t p = t.space.size(); p-- > 0;) {
      if (++idx[p] < int(t.space[p].values.size())) break;
      idx[p] = 0;
    }
  }
  for (const auto& [c, v] : seen) e.observations.push_back({c, v / best});
  return e;
}

TEST(SkillPrior, RulesOutValuesEveryOtherShapeFoundSlow) {
  TuneTarget t = test_grid();
  SkillPrior prior(t, {neighbour(t, 5), neighbour(t, 7)});
  ASSERT_EQ(prior.skills(), 2u);
  EXPECT_TRUE(prior.pruned(t.index_of({{"a", 6}, {"b", 32}, {"c", 0}})));  // c = 0: 1.6x everywhere
  EXPECT_FALSE(prior.pruned(t.index_of({{"a", 6}, {"b", 32}, {"c", 5}})));
  bool rule_for_c0 = false;
  for (const std::string& r : prior.rules()) rule_for_c0 |= r.rfind("c=0 ", 0) == 0;
  EXPECT_TRUE(rule_for_c0);
  // One skill is not enough to rule a value out.
  SkillPrior one(t, {neighbour(t, 5)});
  EXPECT_FALSE(one.pruned(t.index_of({{"a", 6}, {"b", 32}, {"c", 0}})));
  // Never every value of a parameter, even when every one looks slow.
  Evidence slow;
  slow.source = t;
  for (int64_t c : t.space[2].values) slow.observations.push_back({{{"a", 1}, {"b", 16}, {"c", c}}, 2.0});
  slow.observations.push_back({{{"a", 1}, {"b", 16}, {"c", 0}}, 1.0});
  Evidence slow2 = slow;
  SkillPrior all_slow(t, {slow, slow2});
  EXPECT_FALSE(all_slow.ranked(1).empty());
  // The prediction is the evidence's relative time where a skill measured that configuration.
  Evidence exact;
  exact.source = t;
  exact.observations = {{{{"a", 2}, {"b", 48}, {"c", 3}}, 1.25}, {{{"a", 6}, {"b", 32}, {"c", 5}}, 1.0}};
  SkillPrior p1(t, {exact});
  EXPECT_DOUBLE_EQ(p1.predicted(t.index_of({{"a", 2}, {"b", 48}, {"c", 3}})), 1.25);
  EXPECT_EQ(t.config_at(p1.ranked(1).at(0)).at("a"), 6);
  EXPECT_TRUE(std::isnan(SkillPrior(t, {}).predicted({0, 0, 0})));
}

TEST(SkillPrior, MapsTheWholeDimensionBetweenShapes) {
  TuneTarget small, large;
  small.kernel = large.kernel = "test";
  small.space = {{"nc", {256, 512}, 512}};
  large.space = {{"nc", {256, 512, 1024}, 1024}};
  Evidence e{small, {{{{"nc", 512}}, 1.0}, {{{"nc", 256}}, 1.3}}};
  SkillPrior prior(large, {e});
  // nc = 512 covered all of N = 512 there: here that is nc = 1024, not nc = 512.
  EXPECT_EQ(prior.map_index(small, {{"nc", 512}}), std::vector<int>{2});
  EXPECT_EQ(prior.map_index(small, {{"nc", 256}}), std::vector<int>{0});
  EXPECT_EQ(large.config_at(prior.ranked(1).at(0)).at("nc"), 1024);
}

TEST(SkillPrior, NeighbouringShapesHalveTheMeasurementsToTheOptimum) {
  TuneTarget t = test_grid();
  ChoiceProblem model = flat_model(t);
  auto run = [&](const SkillPrior* prior) {
    SearchOptions opt;
    opt.budget = int(t.size());
    SearchSeed start{t.config_at({0, 7, 0}), "start"};  // the model's (poor) start
    if (prior) start = warm_start(*prior, t, start, opt);
    int measured = 0;
    bool saw_pruned = false;
    SearchResult r = k_search(t, model, start, [&](const Config& c) {
      ++measured;
      if (prior && prior->pruned(t.index_of(c)) && measured > 1) saw_pruned = true;
      return Measurement{true, bowl(c, 6), ""};
    }, opt);
    EXPECT_FALSE(saw_pruned) << "a ruled-out configuration was measured";
    for (const SearchNode& n : r.nodes)
      if (n.config.at("a") == 6 && n.config.at("b") == 32 && n.config.at("c") == 5) return n.id + 1;
    return 1000;
  };
  // Skills from shapes whose optimum sits one place to either side (a = 5 and a = 7).
  SkillPrior prior(t, {neighbour(t, 5), neighbour(t, 7)});
  const int cold = run(nullptr), warm = run(&prior);
  EXPECT_LT(cold, 1000);
  EXPECT_LE(2 * warm, cold) << "cold " << cold << ", warm " << warm;
}

}  // namespace
}  // namespace trex::aura
