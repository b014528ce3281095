// The skill prior: rules learned from other shapes' observations rule values out before any
// evaluation, "the whole dimension" maps between shapes, and on a space with a known optimum
// (a deterministic synthetic cost, no timing) a search guided by neighbouring shapes' skills
// reaches the optimum in at most half the measurements of the search without them, never
// measuring a ruled-out configuration.
#include "trex/aura/prior.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trex/aura/choice_ip.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"
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
  Evidence e{small, {{{{"nc", 512}}, 1.0}, {{{"nc", 256}}, 1.3}}, {}, {}};
  SkillPrior prior(large, {e});
  // nc = 512 covered all of N = 512 there: here that is nc = 1024, not nc = 512.
  EXPECT_EQ(prior.map_index(e, {{"nc", 512}}), std::vector<int>{2});
  EXPECT_EQ(prior.map_index(e, {{"nc", 256}}), std::vector<int>{0});
  EXPECT_EQ(large.config_at(prior.ranked(1).at(0)).at("nc"), 1024);
}

// channel_block 0 is the kv_compress backward's own split (by entries), not a number: a skill
// whose best was 0 reads, on a target whose space lacks 0, as the target's built-in (64), not as
// the nearest value (8, the slowest it measured). Where the target has 0, 0 stays; a number still
// maps as a number; a kernel whose 0 has no built-in behind it keeps the nearest value.
TEST(SkillPrior, ReadsAKernelsOwnChoiceAsTheTargetsBuiltinNotAsTheNearestNumber) {
  TuneTarget source, target;
  source.kernel = target.kernel = "kv_compress.bwd";
  source.space = {{"channel_block", {0, 8, 16, 32, 64, 128, 256, 512}, 0, {512}}};
  target.space = {{"channel_block", {8, 16, 32, 64, 128}, 0, {128}}};
  Evidence e{source,
             {{{{"channel_block", 0}}, 1.0}, {{{"channel_block", 8}}, 2.4}, {{{"channel_block", 64}}, 1.9}},
             {},
             {}};
  SkillPrior prior(target, {e});
  EXPECT_EQ(target.config_at(prior.map_index(e, {{"channel_block", 0}})).at("channel_block"), 64);
  EXPECT_EQ(target.config_at(prior.ranked(1).at(0)).at("channel_block"), 64);
  EXPECT_EQ(target.config_at(prior.map_index(e, {{"channel_block", 8}})).at("channel_block"), 8);
  TuneTarget with0 = target;
  with0.space[0].values.insert(with0.space[0].values.begin(), 0);
  SkillPrior prior0(with0, {e});
  EXPECT_EQ(with0.config_at(prior0.map_index(e, {{"channel_block", 0}})).at("channel_block"), 0);
  TuneTarget other = target, other_src = source;
  other.kernel = other_src.kernel = "test";  // no built-in value: 0 is a value like any other
  Evidence eo{other_src, e.observations, {}, {}};
  SkillPrior prior_other(other, {eo});
  EXPECT_EQ(other.config_at(prior_other.map_index(eo, {{"channel_block", 0}})).at("channel_block"), 8);
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

// A row-blocked kernel's space: the block in elements, relative to the tensor (2^log_total
// elements) or absolute, and a store choice with no scale.
TuneTarget blocked(int log_total) {
  TuneTarget t;
  t.kernel = "test";
  t.dims = {int64_t(1) << log_total};
  std::vector<int64_t> blocks;
  for (int b = 10; b <= 20; ++b) blocks.push_back(int64_t(1) << b);
  t.space = {{"block", blocks, 0, {t.dims[0]}}, {"stream", {1, 2}}};
  return t;
}

// Time of a blocking: a bowl in log2(block) around `best_log`; stream = 2 costs 15% everywhere.
double blocked_cost(const Config& c, double best_log) {
  const double d = std::log2(double(c.at("block"))) - best_log;
  return (1.0 + 0.04 * d * d) * (c.at("stream") == 2 ? 1.15 : 1.0);
}

// A skill that measured its whole space (relative to its best).
Evidence whole_table(const TuneTarget& t, double best_log) {
  Evidence e;
  e.source = t;
  double best = 1e9;
  for (size_t i = 0; i < t.size(); ++i) best = std::min(best, blocked_cost(t.config_at({int(i / 2), int(i % 2)}), best_log));
  for (size_t i = 0; i < t.size(); ++i) {
    Config c = t.config_at({int(i / 2), int(i % 2)});
    e.observations.push_back({c, blocked_cost(c, best_log) / best});
  }
  return e;
}

TEST(SkillPrior, TransfersABlockAsARatioWhenTheSkillsAgreeOnOne) {
  // Three shapes whose best block is an eighth of the tensor: 2^13 of 2^16, 2^15 of 2^18, ...
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  SkillPrior prior(t, ev);
  EXPECT_EQ(prior.transfer(0), 0);   // relative to the tensor
  EXPECT_EQ(prior.transfer(1), -1);  // no scale: the store choice maps to itself
  ASSERT_EQ(prior.transfers().size(), 1u);
  EXPECT_EQ(prior.transfers()[0], "block: ratio to 524288");
  // 2^13 of 2^16 elements is 2^16 of 2^19.
  EXPECT_EQ(t.config_at(prior.map_index(ev[0], {{"block", 8192}, {"stream", 1}})).at("block"), 65536);
  EXPECT_EQ(t.config_at({prior.consensus(0), 0}).at("block"), 65536);
  EXPECT_EQ(t.config_at({0, prior.consensus(1)}).at("stream"), 1);
  // From a poor start the guided search measures the optimum second, right after the model's
  // start (warm_start() measures the start first); the cold one walks.
  ChoiceProblem model = flat_model(t);
  auto run = [&](const SkillPrior* p) {
    SearchOptions opt;
    opt.budget = int(t.size());
    SearchSeed start{t.config_at({0, 1}), "start"};
    if (p) start = warm_start(*p, t, start, opt);
    SearchResult r = k_search(t, model, start, [&](const Config& c) { return Measurement{true, blocked_cost(c, 16), ""}; }, opt);
    for (const SearchNode& n : r.nodes)
      if (n.config.at("block") == 65536 && n.config.at("stream") == 1) return n.id + 1;
    return 1000;
  };
  const int cold = run(nullptr), warm = run(&prior);
  EXPECT_EQ(warm, 2);
  EXPECT_LT(cold, 1000);
  EXPECT_LE(2 * warm, cold) << "cold " << cold << ", warm " << warm;
}

TEST(SkillPrior, AWarmStartMeasuresTheModelsStartFirstAndTheSkillsPredictionNext) {
  // Skills that agree on a block an eighth of the tensor; the model starts elsewhere.
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  SkillPrior prior(t, ev);
  SearchOptions opt;
  opt.budget = int(t.size());
  const SearchSeed start{t.config_at({0, 1}), "start"};
  const SearchSeed root = warm_start(prior, t, start, opt);
  EXPECT_EQ(root.config, start.config);
  EXPECT_EQ(root.origin, "start");
  ASSERT_FALSE(opt.seeds.empty());
  EXPECT_EQ(opt.seeds[0].origin, "skills");
  EXPECT_EQ(opt.seeds[0].config.at("block"), 65536);
  EXPECT_EQ(opt.seeds[0].config.at("stream"), 1);
  // Where the model's start is already right, a search with one evaluation keeps it: the
  // skills' prediction (here wrong: the true optimum is the start's block) is not measured
  // in its place.
  ChoiceProblem model = flat_model(t);
  const SearchSeed right{t.config_at({3, 0}), "start"};  // block 2^13, stream 1
  SearchOptions o2;
  o2.budget = 1;
  const SearchSeed r2 = warm_start(prior, t, right, o2);
  SearchResult r = k_search(t, model, r2, [&](const Config& c) { return Measurement{true, blocked_cost(c, 13), ""}; }, o2);
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].config, right.config);
}

TEST(SkillPrior, ASeedThatDoesNotBeatTheStartLeavesTheMovesToTheModel) {
  // Skills agree on a block an eighth of the tensor (2^16 here) and rule the small blocks out;
  // on this shape the best block is 2^12, below the model's start (2^14). The skills' seed is
  // slower than the start, so the guided search goes on exactly as the cold one (one evaluation
  // later) and reaches the block the skills had ruled out. (Until session 12 the skills kept
  // ordering and pruning the moves and the guided search never measured it.)
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  SkillPrior prior(t, ev);
  ASSERT_TRUE(prior.pruned(t.index_of({{"block", 4096}, {"stream", 1}})));
  ChoiceProblem model = flat_model(t);
  auto eval = [](const Config& c) { return Measurement{true, blocked_cost(c, 12), ""}; };
  const SearchSeed start{t.config_at({4, 0}), "start"};
  SearchOptions cold;
  cold.budget = 6;
  const SearchResult rc = k_search(t, model, start, eval, cold);
  SearchOptions o;
  o.budget = 7;  // one more: the skills' seed
  const SearchResult rg = k_search(t, model, warm_start(prior, t, start, o), eval, o);
  ASSERT_EQ(rg.nodes.size(), 7u);
  EXPECT_EQ(rg.nodes[1].origin, "skills");
  EXPECT_EQ(rg.nodes[1].config.at("block"), 65536);
  EXPECT_EQ(rg.nodes[1].state, NodeState::kRolledBack);
  ASSERT_EQ(rc.nodes.size(), 6u);
  for (size_t i = 1; i < rc.nodes.size(); ++i) EXPECT_EQ(rg.nodes[i + 1].config, rc.nodes[i].config) << "node " << i;
  ASSERT_GE(rg.best, 0);
  EXPECT_EQ(rg.nodes[size_t(rg.best)].config.at("block"), 4096);
  EXPECT_EQ(rc.nodes[size_t(rc.best)].config.at("block"), 4096);
}

TEST(SkillPrior, ABuiltinSeedThatBeatsTheStartDoesNotProveTheSkills) {
  // As above, but the search also gets the built-in as a seed after the skills' one, as `trex
  // aura tune` always adds it, and the built-in (block 2^15, normal stores) beats the start (2^15,
  // streaming stores). The skills' seed (2^16) still loses, so the moves follow the model: the guided search measures what the
  // cold search with the same built-in seed measures (one evaluation later) and reaches 2^12, the
  // block the skills rule out. (Before reviewer 3's fix any committed seed, the built-in
  // included, let the skills go on ordering and pruning, and 2^12 was never measured.)
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  SkillPrior prior(t, ev);
  const Config builtin = t.config_at({5, 0});
  ASSERT_EQ(builtin.at("block"), 32768);
  ASSERT_FALSE(prior.pruned(t.index_of(builtin)));
  ASSERT_TRUE(prior.pruned(t.index_of({{"block", 4096}, {"stream", 1}})));
  ChoiceProblem model = flat_model(t);
  auto eval = [](const Config& c) { return Measurement{true, blocked_cost(c, 12), ""}; };
  const SearchSeed start{t.config_at({5, 1}), "start"};
  SearchOptions cold;
  cold.budget = 10;
  cold.seeds.push_back({builtin, "builtin"});
  const SearchResult rc = k_search(t, model, start, eval, cold);
  SearchOptions o;
  o.budget = 11;  // one more: the skills' seed
  const SearchSeed root = warm_start(prior, t, start, o);
  o.seeds.push_back({builtin, "builtin"});  // after the skills' seed, as tune adds it
  const SearchResult rg = k_search(t, model, root, eval, o);
  ASSERT_EQ(rg.nodes.size(), 11u);
  EXPECT_EQ(rg.nodes[1].origin, "skills");
  EXPECT_EQ(rg.nodes[1].state, NodeState::kRolledBack);
  EXPECT_EQ(rg.nodes[2].origin, "builtin");
  EXPECT_EQ(rg.nodes[2].state, NodeState::kCommitted);
  ASSERT_EQ(rc.nodes.size(), 10u);
  EXPECT_EQ(rc.nodes[1].origin, "builtin");
  // The cold search's moves, less the one the guided search had measured as the skills' seed
  // (never measured twice), in the same order.
  std::vector<Config> cold_moves;
  for (size_t i = 2; i < rc.nodes.size(); ++i)
    if (rc.nodes[i].config != rg.nodes[1].config) cold_moves.push_back(rc.nodes[i].config);
  ASSERT_EQ(cold_moves.size(), 7u);
  for (size_t i = 0; i < cold_moves.size(); ++i) EXPECT_EQ(rg.nodes[i + 3].config, cold_moves[i]) << "move " << i;
  ASSERT_GE(rg.best, 0);
  EXPECT_EQ(rg.nodes[size_t(rg.best)].config.at("block"), 4096);
}

TEST(SkillPrior, APredictionThatOneSkillMovesIsNotMeasured) {
  // Three skills agree on a block an eighth of the tensor: the prediction holds with any one of
  // them left out, and warm_start() measures it second.
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  const SearchSeed start{t.config_at({0, 1}), "start"};
  const std::vector<int> from = t.index_of(start.config);
  SkillPrior agree(t, ev);
  EXPECT_TRUE(agree.stable(from, agree.descend(from)));
  SearchOptions o1;
  warm_start(agree, t, start, o1);
  ASSERT_EQ(o1.seeds.size(), 1u);
  EXPECT_EQ(o1.seeds[0].config.at("block"), 65536);
  // Four skills, one of them with its best elsewhere (a noise draw on a flat space, say): the
  // four predict a move, but with one of them left out the prediction changes, so it is not
  // measured and the search starts as the cold one.
  ev.push_back(whole_table(blocked(17), 10));
  SkillPrior split(t, ev);
  const std::vector<int> to = split.descend(from);
  ASSERT_NE(to, from);
  EXPECT_FALSE(split.stable(from, to));
  SearchOptions o2;
  const SearchSeed root = warm_start(split, t, start, o2);
  EXPECT_EQ(root.config, start.config);
  EXPECT_TRUE(o2.seeds.empty());
}

TEST(SkillPrior, KeepsAnAbsoluteBlockWhenThatIsWhatTheSkillsAgreeOn) {
  // The best block is 2^14 elements whatever the tensor (a cache-sized block).
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), 14));
  const TuneTarget t = blocked(19);
  SkillPrior prior(t, ev);
  EXPECT_EQ(prior.transfer(0), -1);
  EXPECT_EQ(prior.transfers()[0], "block: absolute");
  EXPECT_EQ(t.config_at({prior.consensus(0), 0}).at("block"), 16384);
  // Skills that disagree (best at 2^11 and 2^17 under every transfer) give no consensus.
  SkillPrior split(t, {whole_table(blocked(16), 11), whole_table(blocked(18), 17)});
  EXPECT_EQ(split.consensus(0), -1);
  EXPECT_EQ(split.consensus(1), 0);  // both agree that stream = 1 wins
}

TEST(SkillPrior, AStoreChoiceFollowsTheModelsChoiceWhereTheSkillsFoundTheModelRight) {
  // Three shapes where normal stores (stream = 1) won and the model had picked them too; on the
  // target the model picks non-temporal stores (stream = 2: the shape no longer fits the caches,
  // say). Read as "the model's choice won", the skills' consensus is the model's choice here;
  // without the model's starts the choice maps to itself.
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) ev.push_back(whole_table(blocked(lt), lt - 3));
  const TuneTarget t = blocked(19);
  EXPECT_FALSE(SkillPrior(t, ev).choice_follows_model(1));
  EXPECT_EQ(SkillPrior(t, ev).consensus(1), 0);  // stream = 1, as measured there
  for (Evidence& e : ev) {
    e.source_start = {{"block", 1024}, {"stream", 1}};
    e.target_start = {{"block", 1024}, {"stream", 2}};
  }
  SkillPrior prior(t, ev);
  EXPECT_TRUE(prior.choice_follows_model(1));
  EXPECT_EQ(prior.consensus(1), 1);  // stream = 2: the model's choice on this shape
  // The skills' stream = 2 observations (the choice the model did not make there) land on 1.
  EXPECT_EQ(t.config_at(prior.map_index(ev[0], {{"block", 8192}, {"stream", 2}})).at("stream"), 1);
  // Skills whose best stores disagree with the model's choice in different ways keep the value:
  // one skill's model picked 2 (and 1 won), so under the model 1 won on two, 2 on one.
  ev[1].source_start["stream"] = 2;
  EXPECT_FALSE(SkillPrior(t, ev).choice_follows_model(1));
}

TEST(SkillPrior, AConsensusWithinTheNoiseDoesNotMoveTheStart) {
  // Three skills whose blocks are flat within 1% (the best a noise draw that happens to agree on
  // 2^14) and a start at 2^16: the consensus is 2^14 but no skill measured a settled gain over
  // the start's value, so the root stays the model's start.
  const TuneTarget t = blocked(19);
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) {
    Evidence e;
    e.source = blocked(lt);
    for (int64_t b : e.source.space[0].values)
      e.observations.push_back({{{"block", b}, {"stream", 1}}, b == 16384 ? 1.0 : 1.008});
    ev.push_back(e);
  }
  SkillPrior prior(t, ev);
  ASSERT_GE(prior.consensus(0), 0);
  EXPECT_EQ(t.config_at({prior.consensus(0), 0}).at("block"), 16384);
  const std::vector<int> start = t.index_of({{"block", 65536}, {"stream", 1}});
  EXPECT_EQ(prior.descend(start), start);
  // The same skills with a settled gain (the start's block 5% slower in every one) move it.
  for (Evidence& e : ev)
    for (Observation& o : e.observations) o.relative = o.config.at("block") == 16384 ? 1.0 : 1.05;
  SkillPrior gaining(t, ev);
  EXPECT_EQ(t.config_at(gaining.descend(start)).at("block"), 16384);
}

TEST(SkillPrior, ASkillShapeWithoutAFeasibleModelGivesEvidenceWithoutAStart) {
  // An L3 of 4 KiB forbids every (kc, nc) pair of a 1024^3 GEMM (4 KC NC > L3 / 2 from
  // KC = 64 and NC = one NR sliver on, the smallest of its space), while 64x64x8 (KC = 8,
  // NC = one sliver) still fits: the skill's model has no feasible configuration. Its evidence
  // carries an empty start (the choice maps to itself) instead of a configuration read from an
  // empty solution. (Since session 15 the GEMM space's analytic values come from these caches,
  // and the analytic blocking fits any L3 its clamps leave alone, hence the tiny L3.)
  AuraHardware hw;
  hw.name = "tiny-l3";
  hw.isa = "avx2";
  hw.l1_bytes = 32 << 10;
  hw.l2_bytes = 32 << 10;
  hw.l3_bytes = 4 << 10;
  hw.peak_flops = hw.peak_avx2 = 1e9;  // slow FMAs: both shapes compute-bound, one regime
  hw.bw_mem = 1e12;
  hw.bw_l1 = hw.bw_l2 = hw.bw_l3 = 1e12;
  const TuneTarget small = make_target("gemm", {64, 64, 8}, hw, "fp32");
  const TuneTarget big = make_target("gemm", {1024, 1024, 1024}, hw, "fp32");
  ASSERT_EQ(roofline_regime(small, hw), roofline_regime(big, hw));
  ASSERT_FALSE(solve_choices(performance_model(big, hw)).feasible);
  ASSERT_TRUE(solve_choices(performance_model(small, hw)).feasible);
  Skill k;
  k.kernel = "gemm";
  k.shape = big.shape_text();
  k.hardware = hw.features();
  k.observations.push_back({big.config_at(std::vector<int>(big.space.size(), 0)), 1.0});
  const std::vector<Evidence> ev = prior_evidence({k}, small, hw);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].source_start.empty());
  EXPECT_EQ(ev[0].target_start, model_start(small, hw));
  EXPECT_EQ(ev[0].target_start.size(), small.space.size());
}

TEST(SkillPrior, AConsensusOnTheStartsValueHoldsItAgainstTheGreedyStep) {
  // Every skill's best block is 2^14 (with normal stores); with non-temporal stores 2^15 is far
  // faster than 2^14, so the paired move 2^14 -> 2^15 is a settled gain by its median over the
  // store values. The start already holds the consensus: the block stays where the skills agree.
  const TuneTarget t = blocked(19);
  std::vector<Evidence> ev;
  for (int lt : {16, 18, 20}) {
    Evidence e;
    e.source = blocked(lt);
    for (int64_t b : e.source.space[0].values)
      for (int64_t s : {1, 2}) {
        double r = 1.5;
        if (b == 16384) r = s == 1 ? 1.0 : 2.0;
        if (b == 32768) r = s == 1 ? 1.02 : 1.2;
        e.observations.push_back({{{"block", b}, {"stream", s}}, r});
      }
    ev.push_back(e);
  }
  SkillPrior prior(t, ev);
  ASSERT_GE(prior.consensus(0), 0);
  ASSERT_EQ(t.config_at({prior.consensus(0), 0}).at("block"), 16384);
  const std::vector<int> start = t.index_of({{"block", 16384}, {"stream", 1}});
  ASSERT_LT(prior.settled_ratio(0, start[0], t.index_of({{"block", 32768}, {"stream", 1}})[0]), 1);
  EXPECT_EQ(prior.descend(start), start);
}

}  // namespace
}  // namespace trex::aura
