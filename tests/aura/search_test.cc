// K-Search on spaces with a known optimum, measured by a deterministic synthetic cost (no
// timing is asserted): it finds the optimum within a small share of the space, records gate
// failures without committing them, commits only verified gains, respects the budget, and with
// a skill's seed and directions reaches the optimum in fewer measurements.
#include "trex/aura/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "test_grid.h"

namespace trex::aura {
namespace {

// A bowl with its minimum at a=6, b=32, c=5 (1.0 there), plus a coupling term so one parameter
// at a time is not enough.
double bowl(const Config& c) {
  double a = double(c.at("a")), b = double(c.at("b")) / 16, z = double(c.at("c"));
  return 1.0 + 0.02 * (a - 6) * (a - 6) + 0.03 * (b - 2) * (b - 2) + 0.02 * (z - 5) * (z - 5) +
         0.01 * std::fabs((a - 6) * (z - 5));
}

// A rough model of the bowl (right direction, wrong curvature and no coupling).
ChoiceProblem rough_model(const TuneTarget& t) {
  ChoiceProblem pr;
  for (const SpaceParam& sp : t.space) {
    ChoiceParam cp;
    cp.name = sp.name;
    cp.values = sp.values;
    for (int64_t v : sp.values) {
      double x = sp.name == "a" ? double(v) - 5 : sp.name == "b" ? double(v) / 16 - 3 : double(v) - 4;
      cp.cost.push_back(0.01 * x * x);
    }
    pr.params.push_back(cp);
  }
  return pr;
}

TEST(KSearch, FindsTheKnownOptimumWithinFifteenPercentOfTheSpace) {
  TuneTarget t = test_grid();
  ChoiceProblem model = rough_model(t);
  ChoiceSolution s = solve_choices(model);
  ASSERT_TRUE(s.feasible);
  int calls = 0;
  Evaluator eval = [&](const Config& c) {
    ++calls;
    return Measurement{true, bowl(c), ""};
  };
  SearchOptions opt;
  opt.budget = int(t.size() * 15 / 100);
  SearchResult r = k_search(t, model, {t.config_at(s.index), "start"}, eval, opt);
  ASSERT_GE(r.best, 0);
  const Config& best = r.nodes[size_t(r.best)].config;
  EXPECT_EQ(best.at("a"), 6);
  EXPECT_EQ(best.at("b"), 32);
  EXPECT_EQ(best.at("c"), 5);
  EXPECT_LE(int(r.nodes.size()), opt.budget);
  EXPECT_EQ(calls, int(r.nodes.size()));  // every node measured once, no configuration twice
  std::map<Config, int> seen;
  for (const SearchNode& n : r.nodes) EXPECT_EQ(++seen[n.config], 1);
  // Every commit improved on the previous checkpoint by min_gain.
  double last = 1e9;
  for (const SearchNode& n : r.nodes)
    if (n.state == NodeState::kCommitted) {
      EXPECT_LT(n.m.seconds, last * (1 - opt.min_gain));
      last = n.m.seconds;
    }
}

TEST(KSearch, GateFailuresAreRecordedNeverCommitted) {
  TuneTarget t = test_grid();
  ChoiceProblem model = rough_model(t);
  // The fastest configurations all fail the gate (a "kernel" that skips work).
  Evaluator eval = [&](const Config& c) {
    if (c.at("a") == 6) return Measurement{false, 0.0, "gate: out[3] not written"};
    return Measurement{true, bowl(c), ""};
  };
  SearchOptions opt;
  opt.budget = 60;
  SearchResult r = k_search(t, model, {t.config_at({4, 1, 5}), "start"}, eval, opt);
  ASSERT_GE(r.best, 0);
  int failed = 0;
  for (const SearchNode& n : r.nodes) {
    if (!n.m.passed) {
      ++failed;
      EXPECT_EQ(n.state, NodeState::kFailed);
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_NE(r.nodes[size_t(r.best)].config.at("a"), 6);
  EXPECT_TRUE(r.nodes[size_t(r.best)].m.passed);
  // The best passing configuration: a = 5 or 7 with b = 32, c = 5.
  EXPECT_EQ(r.nodes[size_t(r.best)].config.at("b"), 32);
}

TEST(KSearch, RespectsTheBudgetAndStopsWhenTheSpaceIsExhausted) {
  TuneTarget t;
  t.space = {{"a", {1, 2, 3}}};
  ChoiceProblem model = rough_model(t);
  Evaluator eval = [](const Config& c) { return Measurement{true, double(c.at("a")), ""}; };
  SearchOptions opt;
  opt.budget = 100;
  SearchResult r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  EXPECT_EQ(r.nodes.size(), 3u);
  EXPECT_EQ(r.nodes[size_t(r.best)].config.at("a"), 1);
  opt.budget = 1;
  r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  EXPECT_EQ(r.nodes.size(), 1u);
}

TEST(KSearch, ASkillSeedReachesTheOptimumWithFewerMeasurements) {
  TuneTarget t = test_grid();
  ChoiceProblem model = rough_model(t);
  Evaluator eval = [](const Config& c) { return Measurement{true, bowl(c), ""}; };
  auto measurements_to_optimum = [&](const SearchOptions& opt) {
    SearchResult r = k_search(t, model, {t.config_at({0, 7, 0}), "start"}, eval, opt);
    for (const SearchNode& n : r.nodes)
      if (n.config.at("a") == 6 && n.config.at("b") == 32 && n.config.at("c") == 5) return n.id + 1;
    return 1000;
  };
  SearchOptions cold;
  cold.budget = 200;
  SearchOptions warm = cold;
  warm.seeds.push_back({{{"a", 6}, {"b", 48}, {"c", 5}}, "skill #1"});  // from a neighbouring shape
  warm.preferred.insert({"b", -1});
  int n_cold = measurements_to_optimum(cold), n_warm = measurements_to_optimum(warm);
  EXPECT_LT(n_cold, 1000);
  EXPECT_LE(2 * n_warm, n_cold) << "cold " << n_cold << ", warm " << n_warm;
}

TEST(KSearch, ExhaustiveVisitsEveryConfigurationOnce) {
  TuneTarget t = test_grid();
  std::map<Config, int> seen;
  auto all = exhaustive(t, [&](const Config& c) {
    ++seen[c];
    return Measurement{true, bowl(c), ""};
  });
  EXPECT_EQ(all.size(), t.size());
  EXPECT_EQ(seen.size(), t.size());
  EXPECT_EQ(exhaustive(t, [](const Config&) { return Measurement{}; }, 10).size(), 10u);
}

TEST(KSearch, DescribesChanges) {
  EXPECT_EQ(describe_change({{"kc", 256}, {"mc", 96}}, {{"kc", 384}, {"mc", 96}}), "kc 256->384");
  EXPECT_EQ(describe_change({{"kc", 256}}, {{"kc", 256}}), "same");
}

// A model of the five-point line below that ranks a = 4 first from a = 3, then a = 5.
ChoiceProblem line_model() {
  ChoiceProblem pr;
  pr.params.push_back({});
  pr.params[0].name = "a";
  pr.params[0].values = {1, 2, 3, 4, 5};
  pr.params[0].cost = {0.04, 0.03, 0.02, 0.0, 0.01};
  return pr;
}

// Confirmation (SearchOptions::confirm): a draw of a = 4 that is 2% faster than the start, inside
// the 3% band, is measured again before the checkpoint moves; its second draw is 4% slower, so
// the mean does not beat the start (measured again too) and the start stays. Without confirmation
// the lucky draw commits. Both re-measurements count against the budget.
TEST(KSearch, ALuckyDrawInsideTheNoiseBandIsMeasuredAgainAndNotCommitted) {
  TuneTarget t;
  t.space = {{"a", {1, 2, 3, 4, 5}}};
  ChoiceProblem model = line_model();
  std::map<int64_t, int> calls;
  Evaluator eval = [&](const Config& c) {
    const int64_t a = c.at("a");
    const int k = calls[a]++;
    const double truth = a == 3 ? 1.00 : a == 4 ? 1.04 : 1.10;
    return Measurement{true, a == 4 && k == 0 ? 0.98 : truth, ""};
  };
  SearchOptions opt;
  opt.budget = 4;
  opt.confirm = 0.03;
  SearchResult r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[1].config.at("a"), 4);
  EXPECT_EQ(r.nodes[1].state, NodeState::kRolledBack);
  EXPECT_EQ(r.nodes[1].measurements, 2);
  EXPECT_DOUBLE_EQ(r.nodes[1].m.seconds, (0.98 + 1.04) / 2);
  EXPECT_EQ(r.nodes[0].measurements, 2);  // the checkpoint, as often as the candidate
  EXPECT_EQ(r.best, 0);
  EXPECT_EQ(r.refuted, 1);
  EXPECT_EQ(r.confirmed, 0);
  EXPECT_EQ(r.measurements, 4);
  EXPECT_EQ(r.nodes[1].spent, 4);
  EXPECT_EQ(calls[3] + calls[4], 4);  // every measurement is an evaluator call within the budget

  calls.clear();
  opt.confirm = 0;
  r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  ASSERT_GE(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[1].state, NodeState::kCommitted);  // the lucky draw, unconfirmed
  EXPECT_EQ(r.nodes[1].measurements, 1);
  EXPECT_EQ(r.measurements, int(r.nodes.size()));
}

// A gain that holds on the second draw commits; a gain larger than the band commits on one
// measurement; the search stops at the budget counted in measurements, not nodes.
TEST(KSearch, AConfirmedGainCommitsAndALargeGainNeedsNoSecondDraw) {
  TuneTarget t;
  t.space = {{"a", {1, 2, 3, 4, 5}}};
  ChoiceProblem model = line_model();
  int calls = 0;
  Evaluator eval = [&](const Config& c) {
    ++calls;
    const int64_t a = c.at("a");
    return Measurement{true, a == 3 ? 1.00 : a == 4 ? 0.98 : a == 5 ? 0.80 : 1.10, ""};
  };
  SearchOptions opt;
  opt.budget = 100;
  opt.confirm = 0.03;
  SearchResult r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  ASSERT_EQ(r.nodes.size(), 5u);  // the whole space
  EXPECT_EQ(r.nodes[1].config.at("a"), 4);
  EXPECT_EQ(r.nodes[1].state, NodeState::kCommitted);
  EXPECT_EQ(r.nodes[1].measurements, 2);
  EXPECT_EQ(r.nodes[2].config.at("a"), 5);  // the committed direction again
  EXPECT_EQ(r.nodes[2].state, NodeState::kCommitted);
  EXPECT_EQ(r.nodes[2].measurements, 1);  // 18% faster: outside the band
  EXPECT_EQ(r.nodes[size_t(r.best)].config.at("a"), 5);
  EXPECT_EQ(r.confirmed, 1);
  EXPECT_EQ(r.measurements, 7);  // 5 configurations, a = 4 and the start once more each
  EXPECT_EQ(calls, 7);

  calls = 0;
  opt.budget = 3;  // the start, a = 4 and its second draw: no room for the start's
  r = k_search(t, model, {{{"a", 3}}, "start"}, eval, opt);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.measurements, 3);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.nodes[0].measurements, 1);
  EXPECT_EQ(r.best, 1);  // 0.98 twice still beats the start's 1.00 by min_gain
}


// Tune's last step (search.h, verify_gain): a gain that came from one slow measurement of the
// built-in does not survive the built-in and the candidate measured again in turn.
TEST(VerifyGain, AGainFromOneSlowBuiltinMeasurementIsNotKept) {
  const Config builtin{{"mc", 120}}, candidate{{"mc", 288}};
  // What the search saw: the built-in at 9.1 (its first, slow measurement), the candidate at 5.7.
  // Measured again: the two are 5.8 and 5.7, within 3%.
  std::vector<std::string> order;
  Evaluator again = [&](const Config& c) {
    order.push_back(c == builtin ? "b" : "c");
    return Measurement{true, c == builtin ? 5.8 : 5.7, ""};
  };
  Verification v = verify_gain(builtin, candidate, again, 3, 0.03);
  EXPECT_FALSE(v.verified);
  EXPECT_EQ(v.measurements, 6);
  EXPECT_DOUBLE_EQ(v.builtin_s, 5.8);
  EXPECT_DOUBLE_EQ(v.candidate_s, 5.7);
  EXPECT_NEAR(v.gain, 5.8 / 5.7, 1e-12);
  EXPECT_FALSE(v.message.empty());
  // In turn, the side measured first alternating: b c, c b, b c.
  EXPECT_EQ(order, (std::vector<std::string>{"b", "c", "c", "b", "b", "c"}));
}

TEST(VerifyGain, ARealGainIsKeptByTheMediansThroughOneBurst) {
  const Config builtin{{"mc", 120}}, candidate{{"mc", 48}};
  // The candidate is 1.25x faster; one burst makes one of its re-measurements the slowest of all.
  int n = 0;
  Evaluator again = [&](const Config& c) {
    ++n;
    if (c == builtin) return Measurement{true, 1.0, ""};
    return Measurement{true, n == 3 ? 2.0 : 0.8, ""};
  };
  Verification v = verify_gain(builtin, candidate, again, 3, 0.03);
  EXPECT_TRUE(v.verified);
  EXPECT_DOUBLE_EQ(v.builtin_s, 1.0);
  EXPECT_DOUBLE_EQ(v.candidate_s, 0.8);
  EXPECT_DOUBLE_EQ(v.gain, 1.25);
  EXPECT_TRUE(v.message.empty());
}

TEST(VerifyGain, AFailedGateOrNoRoundsVerifiesNothing) {
  const Config builtin{{"x", 1}}, candidate{{"x", 2}};
  int n = 0;
  Evaluator fails_second_time = [&](const Config& c) {
    if (c == candidate) ++n;
    return Measurement{!(c == candidate && n == 2), c == builtin ? 1.0 : 0.5, "poisoned output"};
  };
  Verification v = verify_gain(builtin, candidate, fails_second_time, 3, 0.03);
  EXPECT_FALSE(v.verified);
  EXPECT_EQ(v.measurements, 3);  // b c, then c fails
  EXPECT_NE(v.message.find("candidate failed the gate"), std::string::npos) << v.message;
  Evaluator never = [](const Config&) -> Measurement {
    ADD_FAILURE() << "measured with no rounds";
    return {};
  };
  Verification none = verify_gain(builtin, candidate, never, 0, 0.03);
  EXPECT_FALSE(none.verified);
  EXPECT_EQ(none.measurements, 0);
}

// What a tune's skill records after a verified gain: the built-in at the verification's ratio to
// the best, not the search's single slow profile of it (session 14: 9.1 ms there, 5.8 ms in one run).
TEST(TuneObservations, TheBuiltinIsRecordedFromTheVerificationNotItsFirstMeasurement) {
  const Config builtin{{"mc", 120}}, best{{"mc", 288}}, other{{"mc", 48}};
  SearchResult r;
  r.nodes.push_back({0, -1, builtin, "builtin", "", Measurement{true, 9.1, ""}, NodeState::kRolledBack});
  r.nodes.push_back({1, 0, best, "move", "mc 120->288", Measurement{true, 5.0, ""}, NodeState::kCommitted});
  r.nodes.push_back({2, 1, other, "move", "mc 288->48", Measurement{true, 6.0, ""}, NodeState::kRolledBack});
  r.best = 1;
  Verification v;
  v.measurements = 6;
  v.builtin_s = 5.8;
  v.candidate_s = 5.0;
  v.gain = 5.8 / 5.0;
  v.verified = true;
  auto relative = [](const std::vector<Observation>& obs, const Config& c) {
    double x = -1;
    int n = 0;
    for (const Observation& o : obs)
      if (o.config == c) x = o.relative, ++n;
    EXPECT_EQ(n, 1) << "observations of one configuration";
    return x;
  };
  std::vector<Observation> obs = tune_observations(r, builtin, 9.1, v);
  ASSERT_EQ(obs.size(), 3u);
  EXPECT_DOUBLE_EQ(relative(obs, best), 1.0);
  EXPECT_DOUBLE_EQ(relative(obs, other), 1.2);
  EXPECT_NEAR(relative(obs, builtin), 1.16, 1e-12);  // 5.8 / 5.0, not 9.1 / 5.0
  // Without a verification, the search's own measurement (as before --verify).
  std::vector<Observation> plain = tune_observations(r, builtin, 9.1, Verification{});
  EXPECT_NEAR(relative(plain, builtin), 1.82, 1e-12);
  // The built-in not among the nodes (the tree never reached it): still recorded, once.
  SearchResult no_builtin = r;
  no_builtin.nodes.erase(no_builtin.nodes.begin());
  no_builtin.best = 0;
  EXPECT_NEAR(relative(tune_observations(no_builtin, builtin, 9.1, v), builtin), 1.16, 1e-12);
  // A verification stopped by a failed gate has no medians: the built-in is left out.
  Verification stopped;
  stopped.measurements = 3;
  stopped.message = "the candidate failed the gate on re-measurement";
  std::vector<Observation> left = tune_observations(r, builtin, 9.1, stopped);
  ASSERT_EQ(left.size(), 2u);
  for (const Observation& o : left) EXPECT_FALSE(o.config == builtin);
  EXPECT_DOUBLE_EQ(relative(left, best), 1.0);
}

}  // namespace
}  // namespace trex::aura
