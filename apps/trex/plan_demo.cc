// `trex demo` step: the model accounting and the planner on the shipped configs: V4-Pro's
// published sizes, the strategy search for V4-Pro on one CloudMatrix384, and the error table
// against published runs.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "commands.h"
#include "trex/model/accounting.h"
#include "trex/plan/search.h"
#include "trex/plan/validation.h"

namespace trex::cli {

namespace {

// configs/ in the working directory, or beside the binary's build folder.
std::string configs_dir() {
  namespace fs = std::filesystem;
  if (fs::is_directory("configs/model")) return "configs";
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::is_directory(exe.parent_path().parent_path() / "configs/model"))
    return (exe.parent_path().parent_path() / "configs").string();
  return "";
}

int plan_demo() {
  std::string dir = configs_dir();
  std::printf("trex demo: model accounting and the step planner\n");
  if (dir.empty()) {
    std::printf("  not run: configs/ not found (run from the repository root)\n");
    return 1;
  }
  int failures = 0;
  model::ModelConfig pro = model::load_model_config(dir + "/model/deepseek-v4-pro.toml");
  model::ParamCounts p = model::count_parameters(pro);
  bool sizes = std::abs(p.total() / 1.6e12 - 1) <= 0.02 && std::abs(p.activated / 49e9 - 1) <= 0.02;
  std::printf("  V4-Pro: %.3fT parameters, %.1fB activated (published 1.6T / 49B: %s)\n", p.total() / 1e12,
              p.activated / 1e9, sizes ? "within 2%" : "MISMATCH");
  failures += !sizes;

  plan::Cluster cm = plan::load_cluster(dir + "/cluster/cloudmatrix384.toml");
  plan::Run run = plan::load_run(dir + "/run/v4-pro-8k.toml");
  auto t0 = std::chrono::steady_clock::now();
  plan::SearchOptions o;
  o.top_k = 1;
  plan::SearchResult s = plan::search(pro, cm, run, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (s.top.empty()) {
    std::printf("  search: no strategy fits\n");
    return 1;
  }
  const plan::Prediction& best = s.top.front();
  std::printf("  search on %ld NPUs: %ld predictions in %.2f s; best TP%ld PP%ld CP%ld EP%ld, %.2f s/step, MFU %.1f%% (trex)\n",
              cm.devices(), s.evaluated, seconds, best.strategy.tp, best.strategy.pp, best.strategy.cp, best.strategy.ep,
              best.time.step, 100 * best.mfu_of(model::FlopConvention::kTrex));
  failures += !best.memory.fits;

  std::vector<plan::ValidationCase> cases = plan::load_validation_dir(dir + "/validation");
  std::vector<plan::ValidationResult> results;
  for (const plan::ValidationCase& c : cases) results.push_back(plan::evaluate(c));
  plan::ErrorSummary fit = plan::slice_table(results, plan::Split::kFit).front();
  // The fit runs of the publications the factors were set on (name_split_sources): the demo's
  // check that the factors still reproduce them. Fit-split runs of publications added later
  // were never used to set a factor, so their error is reported, not checked.
  std::vector<const plan::ValidationResult*> set_on;
  for (const plan::ValidationResult& r : results)
    if (r.c.split == plan::Split::kFit && plan::is_name_split_source(r.c.source_key)) set_on.push_back(&r);
  plan::ErrorSummary set = plan::summarize("factors set on", set_on);
  std::vector<plan::ErrorSummary> held_rows = plan::slice_table(results, plan::Split::kHeldOut);
  plan::ErrorSummary held = held_rows.front();
  plan::ErrorSummary independent;  // held-out runs whose source has no fit run (none: 0 runs)
  for (const plan::ErrorSummary& e : held_rows)
    if (e.slice == plan::kIndependentSlice) independent = e;
  char independent_text[64] = "none";
  if (independent.runs > 0)
    std::snprintf(independent_text, sizeof independent_text, "%ld: %.1f%%", independent.runs, 100 * independent.mean_abs);
  std::printf("  validation: %zu published runs; fit split %ld: mean |error| %.1f%% (%ld the factors were set on: "
              "%.1f%%), held-out %ld: %.1f%% (from sources with no fit run: %s); %ld predicted not to fit, %ld fit "
              "only with more recomputation than stated\n",
              cases.size(), fit.runs, 100 * fit.mean_abs, set.runs, 100 * set.mean_abs, held.runs,
              100 * held.mean_abs, independent_text, fit.not_fit + held.not_fit, fit.more_recompute + held.more_recompute);
  // Runs predicted not to fit are printed above, not a demo failure: since session 19 (review
  // rplan5) the two Llama 3 405B 8K runs are, a finding of the memory model against issue 17's
  // goal, not a broken build. tests/plan/validation_test.cc pins them by name, so any other run
  // predicted not to fit fails the test suite.
  failures += set.mean_abs > 0.10;
  return failures == 0 ? 0 : 1;
}

const DemoStepRegistration kPlanDemoStep(110, plan_demo);

}  // namespace

}  // namespace trex::cli
