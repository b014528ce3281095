#include "trex/ordata/builder.h"

#include <chrono>
#include <cstdio>

#include "trex/ordata/certificate.h"
#include "trex/ordata/checks.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/render.h"
#include "trex/ordata/rng.h"
#include "trex/ordata/statement_data.h"

namespace trex::ordata {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

lp::SolveStatus expected_status(FeasibilityMode m) {
  switch (m) {
    case FeasibilityMode::kFeasible: return lp::SolveStatus::kOptimal;
    case FeasibilityMode::kInfeasible: return lp::SolveStatus::kInfeasible;
    case FeasibilityMode::kUnbounded: return lp::SolveStatus::kUnbounded;
  }
  return lp::SolveStatus::kError;
}

}  // namespace

StageTimes& StageTimes::operator+=(const StageTimes& o) {
  generate += o.generate, solve += o.solve, render += o.render, verify += o.verify, dedup += o.dedup, write += o.write;
  return *this;
}

SampleBuilder::SampleBuilder(const CorpusConfig& config) : config_(config), resolver_(lp::make_solver("cbc")) {
  double acc = 0;
  for (const FamilyMix& m : config.families) cumulative_.push_back(acc += m.weight);
}

Sample SampleBuilder::build(uint64_t index, StageTimes& times) {
  auto t0 = Clock::now();
  Sample s;
  s.index = index;
  s.seed = mix_key(config_.seed, index);
  Rng rng(s.seed);
  // Choices first, in a fixed order, so each is a function of the stream alone.
  double pick = rng.uniform() * cumulative_.back();
  size_t f = 0;
  while (f + 1 < cumulative_.size() && pick >= cumulative_[f]) ++f;
  const FamilyMix& mix = config_.families[f];
  const Family& family = *mix.family;
  double share_total = mix.mode_share[0] + mix.mode_share[1] + mix.mode_share[2];
  double u = rng.uniform() * share_total;
  s.mode = u < mix.mode_share[0]                      ? FeasibilityMode::kFeasible
           : u < mix.mode_share[0] + mix.mode_share[1] ? FeasibilityMode::kInfeasible
                                                       : FeasibilityMode::kUnbounded;
  std::vector<std::string> industries = family.industries();
  int industry = int(rng.integer(0, long(industries.size()) - 1));
  int tmpl = int(rng.integer(0, kNumTemplates - 1));
  bool concise = rng.chance(config_.concise_share);

  s.family = family.contract().family;
  s.family_version = family.contract().version;
  s.industry = industries[size_t(industry)];
  s.template_name = template_name(tmpl);
  s.variant = concise ? "concise" : "full";
  char id[96];
  std::snprintf(id, sizeof id, "%s-s%llu-%07llu", s.family.c_str(), (unsigned long long)config_.seed,
                (unsigned long long)index);
  s.id = id;

  Instance inst = family.generate(mix.ranges, s.mode, industry, rng);
  s.params = inst.params;
  s.implied_numbers = inst.implied_numbers;
  times.generate += since(t0);

  // Reference solve through the lp layer (CLP for LPs, CBC for MILPs).
  auto t1 = Clock::now();
  lp::SolveOptions opts;
  opts.time_limit_s = config_.solve_time_limit;
  std::vector<double> duals;
  lp::SolveResult ref = batch_.solve(inst.model, opts, &duals);
  // An optimal LP answered by the standard back end (a numerical doubt) has no duals yet.
  if (ref.status == lp::SolveStatus::kOptimal && !inst.model.is_mip() && duals.empty()) lp_row_duals(inst.model, &duals);
  bool have_duals = !duals.empty();
  times.solve += since(t1);
  s.status = ref.status;
  s.objective = ref.objective;
  s.solver = ref.solver;
  s.solver_version = ref.solver_version;
  if (lp::has_solution(ref.status))
    for (int j = 0; j < inst.model.num_vars(); ++j)
      if (ref.x[size_t(j)] != 0) s.solution.push_back({inst.model.var(j).name, ref.x[size_t(j)]});

  auto t2 = Clock::now();
  s.statement = render_statement(inst.story, tmpl, concise);
  s.formulations = reconstruct(inst.model, inst.story);
  if (config_.program_style == CorpusConfig::kProgramStatementData) {
    const ProgramData data = statement_data(inst.story, tmpl, concise, inst.model, s.statement);
    s.formulations.gurobipy = write_gurobipy(inst.model, &data);
  }
  times.render += since(t2);

  auto t3 = Clock::now();
  if (ref.status == lp::SolveStatus::kError || ref.status == lp::SolveStatus::kUnsupported ||
      ref.status == lp::SolveStatus::kTimeLimitFeasible || ref.status == lp::SolveStatus::kTimeLimitNoSolution ||
      ref.status == lp::SolveStatus::kInfeasibleOrUnbounded) {
    s.rejection = reason::kSolverFailed;
    s.rejection_detail = std::string(lp::to_string(ref.status)) + (ref.message.empty() ? "" : ": " + ref.message);
    s.checks.push_back({"solve", s.rejection + ": " + s.rejection_detail});
  } else if (ref.status != expected_status(s.mode)) {
    s.rejection = reason::kFeasibilityMismatch;
    s.rejection_detail = std::string("asked for ") + to_string(s.mode) + ", solved " + lp::to_string(ref.status);
    s.checks.push_back({"solve", s.rejection + ": " + s.rejection_detail});
  } else if (ref.status == lp::SolveStatus::kOptimal && !inst.model.is_mip() && !have_duals) {
    s.rejection = reason::kSolverFailed;
    s.rejection_detail = "CLP did not return duals for an LP the reference solve found optimal";
    s.checks.push_back({"solve", s.rejection + ": " + s.rejection_detail});
  } else {
    s.checks.push_back({"solve", "pass"});
    Reference r{&inst.model, ref.status, ref.objective, &ref.x, have_duals ? &duals : nullptr};
    run_checks(inst, r, *resolver_, s);
  }
  times.verify += since(t3);
  if (s.rejection.empty()) {
    auto t4 = Clock::now();
    s.fingerprint = fingerprint(s.statement, inst.model);
    times.dedup += since(t4);
  }
  s.model = std::move(inst.model);
  s.story = std::move(inst.story);
  return s;
}

}  // namespace trex::ordata
