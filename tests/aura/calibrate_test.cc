// Calibrating the model's figures to other shapes' observations (calibrate.h): a machine whose
// figures differ from its description is recovered from the relative times of three GEMM shapes,
// so the calibrated program picks the true optimum of a fourth; a figure the evidence cannot
// move stays as described; no evidence changes nothing; the ranked list follows the model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "trex/aura/calibrate.h"
#include "trex/aura/choice_ip.h"
#include "trex/aura/hardware.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"

#include "test_machine.h"

namespace trex::aura {
namespace {

// A one-thread AVX2 machine with round figures (the host's probe plays no part).
AuraHardware described() { return round_avx2_machine(1, 100e9, 50e9, 20e9); }

// The machine as it runs: L2 at a quarter of the described rate, calls twice as dear (both on
// the calibration's grid of quarter octaves).
AuraHardware actual() {
  AuraHardware h = described();
  h.bw_l2 /= 4;
  h.gemm_call_line_s *= 2;
  return h;
}

// Every configuration of t with its time under `truth`, over the fastest: what a whole measured
// table records as a skill's observations.
ShapeEvidence measured(const TuneTarget& t, const AuraHardware& truth) {
  const ChoiceProblem pr = performance_model(t, truth);
  ShapeEvidence e{t, {}};
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::pair<Config, double>> all;
  for (const Config& c : model_ranked(t, pr, t.size())) {
    const double cost = choice_cost(pr, t.index_of(c));
    all.push_back({c, cost});
    best = std::min(best, cost);
  }
  for (const auto& [c, cost] : all) e.observations.push_back({c, cost / best});
  return e;
}

double true_cost(const TuneTarget& t, const Config& c) {
  return choice_cost(performance_model(t, actual()), t.index_of(c));
}

TEST(Calibrate, RecoversTheMachineFromOtherShapesAndPicksTheTrueOptimumOfANewOne) {
  const AuraHardware hw = described();
  std::vector<ShapeEvidence> evidence;
  for (auto dims : {std::vector<int64_t>{256, 512, 512}, {512, 256, 1024}, {128, 1024, 512}})
    evidence.push_back(measured(make_target("gemm", dims, hw), actual()));
  const Calibration cal = calibrate_model(evidence, hw);
  EXPECT_EQ(cal.shapes, 3u);
  EXPECT_GT(cal.error_before, 0.01) << cal.text();
  EXPECT_LT(cal.error_after, 0.25 * cal.error_before) << cal.text();
  EXPECT_FALSE(cal.factors.empty());
  // The held-out shape: the calibrated optimum is the true one (within 0.5% of its true time),
  // where the described model's optimum is not.
  const TuneTarget t = make_target("gemm", {512, 512, 256}, hw);
  const double truth_best = true_cost(t, model_ranked(t, performance_model(t, actual()), 1).front());
  const Config as_described = t.config_at(solve_choices(performance_model(t, hw)).index);
  const Config calibrated = t.config_at(solve_choices(performance_model(t, cal.hw)).index);
  RecordProperty("calibration", cal.text());
  RecordProperty("described_over_true_best", std::to_string(true_cost(t, as_described) / truth_best));
  RecordProperty("calibrated_over_true_best", std::to_string(true_cost(t, calibrated) / truth_best));
  EXPECT_GT(true_cost(t, as_described), 1.005 * truth_best);
  EXPECT_LE(true_cost(t, calibrated), 1.005 * truth_best) << cal.text();
}

TEST(Calibrate, FiguresTheEvidenceCannotMoveStayAsDescribed) {
  const AuraHardware hw = described();
  std::vector<ShapeEvidence> evidence;
  for (auto dims : {std::vector<int64_t>{256, 512, 512}, {512, 256, 1024}})
    evidence.push_back(measured(make_target("gemm", dims, hw), actual()));
  const Calibration cal = calibrate_model(evidence, hw);
  // GEMM at one thread reads neither the pool job's time nor the row kernels' block time.
  EXPECT_EQ(cal.hw.gemm_pool_job_s, hw.gemm_pool_job_s);
  EXPECT_EQ(cal.hw.job_s, hw.job_s);
  for (const auto& [name, factor] : cal.factors) {
    EXPECT_NE(name, "gemm_pool_job_s");
    EXPECT_NE(name, "job_s");
  }
}

TEST(Calibrate, NoEvidenceOrOneObservationAShapeChangesNothing) {
  const AuraHardware hw = described();
  Calibration none = calibrate_model({}, hw);
  EXPECT_EQ(none.shapes, 0u);
  EXPECT_TRUE(none.factors.empty());
  EXPECT_EQ(none.hw.bw_l2, hw.bw_l2);
  const TuneTarget t = make_target("gemm", {256, 512, 512}, hw);
  ShapeEvidence one{t, {{t.config_at(std::vector<int>(t.space.size(), 0)), 1.0}}};
  Calibration single = calibrate_model({one}, hw);
  EXPECT_EQ(single.shapes, 0u);
  EXPECT_TRUE(single.factors.empty());
  EXPECT_NE(single.text().find("as probed"), std::string::npos);
}

TEST(Calibrate, EvidenceIsTheKernelsSkillsOnTheSameHardware) {
  const AuraHardware hw = described();
  const TuneTarget t = make_target("gemm", {512, 512, 256}, hw);
  Skill same;
  same.kernel = "gemm";
  same.shape = "256x512x512";
  same.hardware = hw.features();
  same.observations = {{t.config_at(std::vector<int>(t.space.size(), 0)), 1.0}};
  Skill other_machine = same;
  other_machine.hardware = "avx512 l1=48K/12 l2=2048K l3=491520K t2";
  Skill other_kernel = same;
  other_kernel.kernel = "swiglu.fwd";
  other_kernel.shape = "1024x4096";
  Skill no_observations = same;
  no_observations.observations.clear();
  const std::vector<ShapeEvidence> e = calibration_evidence({same, other_machine, other_kernel, no_observations}, t, hw);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].target.shape_text(), "256x512x512");
}

TEST(Calibrate, TheRankedListIsTheModelsOrderAndStartsAtTheProgramsOptimum) {
  const AuraHardware hw = described();
  const TuneTarget t = make_target("gemm", {512, 512, 256}, hw);
  const ChoiceProblem pr = performance_model(t, hw);
  const std::vector<Config> ranked = model_ranked(t, pr, 20);
  ASSERT_EQ(ranked.size(), 20u);
  EXPECT_NEAR(choice_cost(pr, t.index_of(ranked.front())), solve_choices(pr).objective,
              1e-9 * solve_choices(pr).objective);
  for (size_t i = 1; i < ranked.size(); ++i)
    EXPECT_LE(choice_cost(pr, t.index_of(ranked[i - 1])), choice_cost(pr, t.index_of(ranked[i])));
  EXPECT_LE(model_ranked(t, pr, t.size() + 5).size(), t.size());  // forbidden ones left out: at most all
}

// Skills as `trex aura tune` records them (shape class, features, observations), from whole
// tables measured on the actual machine.
std::vector<Skill> skills_of(const std::vector<std::vector<int64_t>>& shapes, const AuraHardware& hw) {
  std::vector<Skill> out;
  for (const std::vector<int64_t>& dims : shapes) {
    const TuneTarget t = make_target("gemm", dims, hw);
    Skill k;
    k.kernel = "gemm";
    k.shape = t.shape_class;
    k.hardware = hw.features();
    k.observations = measured(t, actual()).observations;
    out.push_back(k);
  }
  return out;
}

Measurement timed_on_actual(const TuneTarget& t, const Config& c) {
  Measurement m;
  m.passed = true;
  m.seconds = true_cost(t, c);
  return m;
}

TEST(Calibrate, TuneMeasuresTheModelsStartFirstAndTheCalibratedStartSecond) {
  const AuraHardware hw = described();
  const TuneTarget t = make_target("gemm", {512, 512, 256}, hw);
  std::vector<Skill> skills = skills_of({{256, 512, 512}, {512, 256, 1024}, {128, 1024, 512}}, hw);
  // A skill of the target's own class, whose observations say the model's start is 4x slower
  // than everything else: a calibration that learned from it would not be of other shapes.
  const ChoiceProblem pr = performance_model(t, hw);
  const Config start = t.config_at(solve_choices(pr).index);
  Skill own = skills.front();
  own.shape = t.shape_class;
  own.observations = {{start, 4.0}, {model_ranked(t, pr, 2).back(), 1.0}};
  skills.push_back(own);
  SearchOptions opt;
  opt.budget = 4;
  const CalibratedSeed cs = calibrated_seed(skills, t, hw, {start, "start"}, opt);
  EXPECT_EQ(cs.calibration.shapes, 3u) << cs.calibration.text();  // the own class left out
  ASSERT_TRUE(cs.seeded) << cs.calibration.text();
  EXPECT_NE(cs.config, start);
  ASSERT_EQ(opt.seeds.size(), 1u);
  opt.seeds.push_back({builtin_config(t, hw), "builtin"});  // as tune adds it, after
  const SearchResult r = k_search(t, pr, {start, "start"}, [&](const Config& c) { return timed_on_actual(t, c); }, opt);
  ASSERT_GE(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].origin, "start");
  EXPECT_EQ(r.nodes[0].config, start);
  EXPECT_EQ(r.nodes[1].origin, "calibrated");
  EXPECT_EQ(r.nodes[1].config, cs.config);
  // Calibrated from the other shapes, its start is the actual machine's best (within 0.5%),
  // where the model's is not.
  const double truth_best = true_cost(t, model_ranked(t, performance_model(t, actual()), 1).front());
  EXPECT_GT(r.nodes[0].m.seconds, 1.005 * truth_best);
  EXPECT_LE(r.nodes[1].m.seconds, 1.005 * truth_best) << cs.calibration.text();
}

TEST(Calibrate, TuneWithoutSkillsOfOtherShapesSearchesAsBefore) {
  const AuraHardware hw = described();
  const TuneTarget t = make_target("gemm", {512, 512, 256}, hw);
  const ChoiceProblem pr = performance_model(t, hw);
  const SearchSeed start{t.config_at(solve_choices(pr).index), "start"};
  auto evaluate = [&](const Config& c) { return timed_on_actual(t, c); };
  SearchOptions before;
  before.budget = 8;
  before.seeds.push_back({builtin_config(t, hw), "builtin"});
  const SearchResult cold = k_search(t, pr, start, evaluate, before);
  std::vector<Skill> own_class_only = skills_of({{512, 512, 256}}, hw);
  for (const std::vector<Skill>& skills : {std::vector<Skill>{}, own_class_only}) {
    SearchOptions opt = before;
    const CalibratedSeed cs = calibrated_seed(skills, t, hw, start, opt);
    EXPECT_EQ(cs.calibration.shapes, 0u);
    EXPECT_FALSE(cs.seeded);
    EXPECT_TRUE(cs.config.empty());
    ASSERT_EQ(opt.seeds.size(), 1u);
    EXPECT_EQ(opt.seeds[0].origin, "builtin");
    const SearchResult r = k_search(t, pr, start, evaluate, opt);
    ASSERT_EQ(r.nodes.size(), cold.nodes.size());
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      EXPECT_EQ(r.nodes[i].config, cold.nodes[i].config);
      EXPECT_EQ(r.nodes[i].origin, cold.nodes[i].origin);
    }
    EXPECT_EQ(r.best, cold.best);
  }
}

}  // namespace
}  // namespace trex::aura
