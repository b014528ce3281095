// trex plan: the full-scale training-step planner (docs/plan.md).
//   trex plan --model M --cluster C --run R --strategy S [--nodes N] [--json] [--svg FILE]
//   trex plan search --model M --cluster C --run R [--top K] [--json]
//   trex plan ladder FILE [--json] [--svg FILE]
//   trex plan validate [DIR] [--json]
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/dist_calibration.h"
#include "trex/plan/ladder.h"
#include "trex/plan/predict.h"
#include "trex/plan/report.h"
#include "trex/plan/search.h"
#include "trex/plan/strategy.h"
#include "trex/plan/validation.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct PlanArgs {
  std::string model, cluster, run, strategy, svg, stack;
  std::vector<std::string> calibration;
  long nodes = 0;
  bool json = false;
};

void require(const std::string& value, const char* flag) {
  if (value.empty()) throw InputError::field(flag, "missing");
}

int run_plan(const PlanArgs& a) {
  require(a.model, "--model");
  require(a.cluster, "--cluster");
  require(a.run, "--run");
  require(a.strategy, "--strategy");
  model::ModelConfig m = model::load_model_config(a.model);
  plan::Cluster c = plan::load_cluster_or_device(a.cluster);
  if (a.nodes > 0) plan::set_nodes(c, a.nodes);
  // A .toml is bench/dist_bench's collective fit (the links); anything else is the JSON of
  // `trex kernels bench` (the compute factors). Both may be given.
  for (const std::string& file : a.calibration) {
    if (file.size() >= 5 && file.compare(file.size() - 5, 5, ".toml") == 0)
      plan::calibrate_links_from_dist(c, plan::load_dist_calibration(file));
    else
      plan::calibrate_from_kernels_bench(c, file);
  }
  plan::Run r = plan::load_run(a.run);
  plan::StackProfile stack = a.stack.empty() ? plan::StackProfile{} : plan::load_stack(a.stack);
  plan::Strategy s = plan::load_strategy(a.strategy, stack);
  plan::Prediction p = plan::predict(m, c, r, s);
  if (!a.svg.empty()) {
    plan::ChartBar bar{m.name + " " + plan::strategy_text(p.strategy).substr(0, 30), p.time, 0, ""};
    write_file_atomic(a.svg, plan::breakdown_chart_file(a.svg, "trex plan: step time breakdown", {bar}));
  }
  if (a.json) {
    std::printf("%s\n", plan::prediction_json(m, c, r, p).dump().c_str());
    return 0;
  }
  std::printf("%s", plan::format_prediction(m, c, r, p).c_str());
  return 0;
}

struct SearchArgs {
  std::string model, cluster, run, base, convention = "trex", svg, stack;
  long nodes = 0;
  int top = 5;
  bool json = false;
};

int run_search(const SearchArgs& a) {
  require(a.model, "--model");
  require(a.cluster, "--cluster");
  require(a.run, "--run");
  model::FlopConvention conv = model::parse_convention(a.convention, "--convention");
  model::ModelConfig m = model::load_model_config(a.model);
  plan::Cluster c = plan::load_cluster_or_device(a.cluster);
  if (a.nodes > 0) plan::set_nodes(c, a.nodes);
  plan::Run r = plan::load_run(a.run);
  plan::SearchOptions o;
  o.top_k = a.top;
  plan::StackProfile stack = a.stack.empty() ? plan::StackProfile{} : plan::load_stack(a.stack);
  // Without --base the search starts from the stack's defaults (its overlaps), as a --base
  // file that sets none of them would.
  o.base = a.base.empty() ? plan::strategy_on_stack(stack) : plan::load_strategy(a.base, stack);
  auto t0 = std::chrono::steady_clock::now();
  plan::SearchResult res = plan::search(m, c, r, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.svg.empty()) {
    std::vector<plan::ChartBar> bars;
    for (size_t i = 0; i < res.top.size(); ++i) {
      char note[48];
      std::snprintf(note, sizeof note, "MFU %.1f%%", 100 * res.top[i].mfu_of(conv));
      bars.push_back({"#" + std::to_string(i + 1) + " " + plan::strategy_text(res.top[i].strategy).substr(0, 28),
                      res.top[i].time, 0, note});
    }
    write_file_atomic(a.svg, plan::breakdown_chart_file(a.svg, "trex plan search: " + m.name + " on " + c.name, bars));
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["cluster"] = c.name;
    j["devices"] = c.devices();
    j["layouts"] = res.layouts;
    j["refused"] = res.refused;
    j["pruned_memory"] = res.pruned_memory;
    j["evaluated"] = res.evaluated;
    j["fitting"] = res.fitting;
    j["seconds"] = seconds;
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const plan::Prediction& p : res.top) top.push_back(plan::prediction_json(m, c, r, p));
    j["top"] = top;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("search: %s on %s (%ld devices), seq %ld, global batch %ld\n", m.name.c_str(), c.name.c_str(),
              c.devices(), r.seq_len, r.global_batch);
  std::printf("        %ld layouts, %ld refused by the checks, %ld pruned by memory, %ld predictions (%ld fit) in %.2f s\n",
              res.layouts, res.refused, res.pruned_memory, res.evaluated, res.fitting, seconds);
  if (res.top.empty()) {
    std::printf("no strategy fits in %s per device\n", plan::bytes_text(c.hbm_bytes).c_str());
    return 0;
  }
  std::printf("%-3s %-72s %8s %7s %9s %8s %8s %8s %8s\n", "#", "strategy", "step s", "MFU", "memory", "compute",
              "comm", "bubble", "optim");
  for (size_t i = 0; i < res.top.size(); ++i) {
    const plan::Prediction& p = res.top[i];
    const plan::TimeBreakdown& t = p.time;
    std::printf("%-3zu %-72s %8.3f %6.1f%% %9s %8.3f %8.3f %8.3f %8.3f\n", i + 1, plan::strategy_text(p.strategy).c_str(),
                t.step, 100 * p.mfu_of(conv), plan::bytes_text(p.memory.total()).c_str(), t.compute + t.launch,
                t.comm(), t.bubble, t.optimizer);
  }
  std::printf("MFU under the %s convention (--convention); times in seconds per step\n", model::to_string(conv));
  return 0;
}

struct LadderArgs {
  std::string file, svg;
  bool json = false;
};

int run_ladder_command(const LadderArgs& a) {
  plan::Ladder l = plan::load_ladder(a.file);
  std::vector<plan::RungResult> rungs = plan::run_ladder(l);
  if (!a.svg.empty()) {
    std::vector<plan::ChartBar> bars;
    for (const plan::RungResult& r : rungs) {
      char note[64];
      std::snprintf(note, sizeof note, "MFU %.1f%%", 100 * r.prediction.mfu_of(l.convention));
      double ref = 0;
      if (r.rung.reported_mfu > 0)
        ref = r.prediction.time.step * r.prediction.mfu_of(l.convention) / r.rung.reported_mfu;
      bars.push_back({r.rung.name, r.prediction.time, ref, note});
    }
    write_file_atomic(a.svg, plan::breakdown_chart_file(a.svg, l.name, bars));
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["name"] = l.name;
    j["source"] = l.source;
    j["convention"] = model::to_string(l.convention);
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const plan::RungResult& r : rungs) {
      nlohmann::ordered_json x = plan::prediction_json(l.model, l.cluster, l.run, r.prediction);
      x["rung"] = r.rung.name;
      x["assumptions"] = r.rung.assumptions;
      x["searched"] = r.rung.search;
      x["efficiency"] = {{"matmul", r.rung.efficiency.matmul}, {"attention", r.rung.efficiency.attention},
                         {"memory", r.rung.efficiency.memory}, {"launch_s", r.rung.efficiency.launch_s}};
      if (r.rung.reported_mfu > 0) x["reported_mfu"] = r.rung.reported_mfu;
      arr.push_back(x);
    }
    j["rungs"] = arr;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s\n%s, %ld devices; %s, seq %ld, global batch %ld\nsource: %s\n\n", l.name.c_str(), l.cluster.name.c_str(),
              l.cluster.devices(), l.model.name.c_str(), l.run.seq_len, l.run.global_batch, l.source.c_str());
  std::printf("%-3s %-44s %8s %9s %9s %9s %9s  %s\n", "", "rung", "step s", model::to_string(l.convention), "6n",
              "megatron", "reported", "memory");
  for (size_t i = 0; i < rungs.size(); ++i) {
    const plan::RungResult& r = rungs[i];
    char rep[16] = "-";
    if (r.rung.reported_mfu > 0) std::snprintf(rep, sizeof rep, "%.2f%%", 100 * r.rung.reported_mfu);
    std::printf("%-3zu %-44s %8.3f %8.1f%% %8.1f%% %8.1f%% %9s  %s %s\n", i, r.rung.name.c_str(), r.prediction.time.step,
                100 * r.prediction.mfu_of(l.convention), 100 * r.prediction.mfu_of(model::FlopConvention::kSixN),
                100 * r.prediction.mfu_of(model::FlopConvention::kMegatron), rep,
                plan::bytes_text(r.prediction.memory.total()).c_str(), r.prediction.memory.fits ? "fits" : "DOES NOT FIT");
  }
  if (rungs.size() > 1) {
    double first = rungs.front().prediction.mfu_of(l.convention), last = rungs.back().prediction.mfu_of(l.convention);
    std::printf("predicted gain %.2fx", last / first);
    if (rungs.front().rung.reported_mfu > 0 && rungs.back().rung.reported_mfu > 0)
      std::printf(" (reported %.2fx)", rungs.back().rung.reported_mfu / rungs.front().rung.reported_mfu);
    std::printf("\n");
  }
  std::printf("\nwhat each rung rests on:\n");
  for (size_t i = 0; i < rungs.size(); ++i) {
    const plan::RungResult& r = rungs[i];
    const plan::TimeBreakdown& t = r.prediction.time;
    std::printf("%zu. %s: %s\n", i, r.rung.name.c_str(), plan::strategy_text(r.prediction.strategy).c_str());
    std::printf("   %s\n", r.rung.assumptions.c_str());
    std::printf("   efficiency: matmul %.2f, attention %.2f, memory %.2f, launch %.1f us%s\n", r.rung.efficiency.matmul,
                r.rung.efficiency.attention, r.rung.efficiency.memory, 1e6 * r.rung.efficiency.launch_s,
                r.rung.search ? "; strategy chosen by trex plan search" : "");
    std::printf("   step %.2f s = compute %.2f + launch %.2f + comm %.2f + bubble %.2f + optimizer %.2f\n", t.step,
                t.compute, t.launch, t.comm(), t.bubble, t.optimizer);
  }
  return 0;
}

struct ValidateArgs {
  std::string dir = "configs/validation";
  std::string svg;
  bool json = false;
};

void print_slices(const char* title, const std::vector<plan::ErrorSummary>& rows, const plan::SourceMix& mix) {
  std::printf("\n%s\n", title);
  if (mix.runs > 0)
    std::printf("%ld runs from %ld sources; the largest, %s, has %ld (%.0f%%)\n", mix.runs, mix.sources, mix.largest.c_str(),
                mix.largest_runs, 100.0 * double(mix.largest_runs) / double(mix.runs));
  std::printf("%-38s %4s %7s %9s %9s %8s %8s %10s %8s %7s\n", "slice", "runs", "sources", "mean|err|", "median", "in +-10%",
              "in +-20%", "mean signed", "worst", "no fit");
  for (const plan::ErrorSummary& e : rows) {
    if (e.runs == 0) {  // an empty slice has no statistics, not zeros
      std::printf("%-38s %4ld %7s %9s %9s %8s %8s %11s %8s %7s\n", e.slice.substr(0, 38).c_str(), e.runs, "-", "-", "-", "-",
                  "-", "-", "-", "-");
      continue;
    }
    std::printf("%-38s %4ld %7ld %8.1f%% %8.1f%% %7.0f%% %7.0f%% %+9.1f%% %7.1f%% %7ld\n", e.slice.substr(0, 38).c_str(),
                e.runs, e.sources, 100 * e.mean_abs, 100 * e.median_abs, 100 * e.within_10, 100 * e.within_20,
                100 * e.mean_signed, 100 * e.worst, e.not_fit);
  }
}

nlohmann::ordered_json mix_json(const plan::SourceMix& m) {
  return {{"runs", m.runs}, {"sources", m.sources}, {"largest_source", m.largest}, {"largest_source_runs", m.largest_runs}};
}

nlohmann::ordered_json slices_json(const std::vector<plan::ErrorSummary>& rows) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const plan::ErrorSummary& e : rows)
    arr.push_back({{"slice", e.slice},
                   {"runs", e.runs},
                   {"mean_abs_error", e.mean_abs},
                   {"median_abs_error", e.median_abs},
                   {"within_10", e.within_10},
                   {"within_20", e.within_20},
                   {"mean_signed_error", e.mean_signed},
                   {"max_abs_error", e.worst},
                   {"not_fit", e.not_fit},
                   {"more_recompute_than_stated", e.more_recompute},
                   {"sources", e.sources}});
  return arr;
}

int run_validate(const ValidateArgs& a) {
  std::vector<plan::ValidationCase> cases = plan::load_validation_dir(a.dir);
  if (cases.empty()) throw InputError(a.dir, 0, "no validation files (*.toml)");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<plan::ChartBar> bars;
  std::vector<plan::ValidationResult> results;
  if (!a.json)
    std::printf("%-30s %-8s %6s %-12s %10s %10s %8s  %s\n", "run", "split", "devices", "convention", "reported", "predicted",
                "error", "strategy");
  for (const plan::ValidationCase& c : cases) {
    plan::ValidationResult r = plan::evaluate(c);
    std::string conv = r.mfu ? model::to_string(c.convention) : "tokens/s/dev";
    if (a.json) {
      rows.push_back({{"name", c.name},
                      {"split", plan::to_string(c.split)},
                      {"source", c.source},
                      {"devices", c.cluster.devices()},
                      {"device", c.cluster.device.device.name},
                      {"stack", c.strategy.stack.name},
                      {"moe", c.model.is_moe()},
                      {"unit", r.mfu ? "mfu" : "tokens_per_s_per_device"},
                      {"convention", r.mfu ? model::to_string(c.convention) : ""},
                      {"reported", r.reported},
                      {"predicted", r.predicted},
                      {"error", r.error},
                      {"step_s", r.prediction.time.step},
                      {"memory_bytes", r.prediction.memory.total()},
                      {"fits", r.prediction.memory.fits},
                      {"more_recompute_than_stated", r.more_recompute_than_stated},
                      {"prediction", plan::prediction_json(c.model, c.cluster, c.run, r.prediction)}});
    } else {
      char rep[32], pred[32];
      if (r.mfu) {
        std::snprintf(rep, sizeof rep, "%.1f%%", 100 * r.reported);
        std::snprintf(pred, sizeof pred, "%.1f%%", 100 * r.predicted);
      } else {
        std::snprintf(rep, sizeof rep, "%.0f", r.reported);
        std::snprintf(pred, sizeof pred, "%.0f", r.predicted);
      }
      std::printf("%-30s %-8s %6ld %-12s %10s %10s %+7.1f%%  %s%s%s\n", c.name.c_str(), plan::to_string(c.split),
                  c.cluster.devices(), conv.c_str(), rep, pred, 100 * r.error,
                  plan::strategy_text(r.prediction.strategy).substr(0, 44).c_str(),
                  r.prediction.memory.fits ? "" : "  (predicted not to fit)",
                  r.more_recompute_than_stated ? "  (fits only with more recompute than stated)" : "");
    }
    char note[64];
    std::snprintf(note, sizeof note, "(%+.0f%%)", 100 * r.error);
    bars.push_back({c.name, r.prediction.time, r.prediction.time.step * (1 + r.error), note});
    results.push_back(std::move(r));
  }
  std::vector<plan::ErrorSummary> fit = plan::slice_table(results, plan::Split::kFit);
  std::vector<plan::ErrorSummary> held = plan::slice_table(results, plan::Split::kHeldOut);
  if (!a.svg.empty())
    write_file_atomic(a.svg, plan::breakdown_chart_file(a.svg, "trex plan validate: predicted step breakdown, dashed = reported", bars));
  if (a.json) {
    nlohmann::ordered_json j;
    j["runs"] = rows;
    j["fit"] = slices_json(fit);
    j["held_out"] = slices_json(held);
    j["fit_sources"] = mix_json(plan::source_mix(results, plan::Split::kFit));
    j["held_out_sources"] = mix_json(plan::source_mix(results, plan::Split::kHeldOut));
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_slices("fit split (runs the factors were set on):", fit, plan::source_mix(results, plan::Split::kFit));
  print_slices("held-out split (never used to set a factor):", held, plan::source_mix(results, plan::Split::kHeldOut));
  std::printf("\ngoals per split: mean |error| <= 10%%, >= 70%% within +-10%%, mean signed within +-3%%, no run that "
              "happened predicted not to fit\n");
  // The memory model's two failures side by side: a run predicted not to fit, and a run that fits
  // only with more recomputation than its source states (validation.stated_recompute).
  std::string more_names;
  for (const plan::ValidationResult& r : results)
    if (r.more_recompute_than_stated) more_names += (more_names.empty() ? " (" : ", ") + r.c.name;
  if (!more_names.empty()) more_names += ")";
  std::printf("predicted not to fit: fit %ld, held-out %ld; fit only with more recomputation than their source states: "
              "fit %ld, held-out %ld%s\n",
              fit.front().not_fit, held.front().not_fit, fit.front().more_recompute, held.front().more_recompute,
              more_names.c_str());
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("plan", "Full-scale training-step planner: memory, step time, MFU, strategy search");
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--model", args->model, "Model config (configs/model/*.toml)");
  cmd->add_option("--cluster", args->cluster,
                  "Cluster description (configs/cluster/*.toml), or a hardware description for one device "
                  "(e.g. what `trex hw probe` wrote for this machine)");
  cmd->add_option("--calibration", args->calibration,
                  "Measured factors, repeatable: the JSON of `trex kernels bench --json` (compute "
                  "efficiencies) and/or the TOML of bench/dist_bench (the link's all-to-all fit)");
  cmd->add_option("--run", args->run, "Run description (configs/run/*.toml)");
  cmd->add_option("--stack", args->stack, "Software-stack profile (configs/plan/stack/*.toml): efficiency scales and schedule defaults");
  cmd->add_option("--strategy", args->strategy, "Parallel strategy (configs/strategy/*.toml)");
  cmd->add_option("--nodes", args->nodes, "Override the cluster's node count")->check(CLI::Range(1L, 1L << 20));
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->add_option("--svg", args->svg, "Also write the step-time breakdown as a bar chart (SVG, or HTML for a .html name)");
  cmd->footer("Model, formulas and assumptions: docs/plan.md.");
  auto sargs = std::make_shared<SearchArgs>();
  CLI::App* search = cmd->add_subcommand("search", "Enumerate valid strategies, prune by memory, rank by predicted step time");
  search->add_option("--model", sargs->model, "Model config");
  search->add_option("--cluster", sargs->cluster, "Cluster description");
  search->add_option("--run", sargs->run, "Run description");
  search->add_option("--base", sargs->base, "Strategy file for the fields not searched (ZeRO, overlap shares, ...)");
  search->add_option("--stack", sargs->stack, "Software-stack profile (configs/plan/stack/*.toml)");
  search->add_option("--nodes", sargs->nodes, "Override the cluster's node count")->check(CLI::Range(1L, 1L << 20));
  search->add_option("--top", sargs->top, "How many strategies to print")->check(CLI::Range(1, 1000))->capture_default_str();
  search->add_option("--convention", sargs->convention, "FLOP convention of the MFU column")->capture_default_str();
  search->add_option("--svg", sargs->svg, "Write the top strategies' breakdowns as SVG");
  search->add_flag("--json", sargs->json, "Print one JSON object");
  search->callback([sargs, action] { *action = [sargs] { return run_search(*sargs); }; });

  auto largs = std::make_shared<LadderArgs>();
  CLI::App* ladder = cmd->add_subcommand("ladder", "Walk a scenario file's rungs (e.g. the MFU ladder) and print each rung's prediction");
  ladder->add_option("file", largs->file, "Scenario file (configs/plan/*.toml)")->required();
  ladder->add_flag("--json", largs->json, "Print one JSON object");
  ladder->add_option("--svg", largs->svg, "Write the rungs' breakdowns as SVG (dashed: the step time the reported MFU implies)");
  ladder->callback([largs, action] { *action = [largs] { return run_ladder_command(*largs); }; });

  auto vargs = std::make_shared<ValidateArgs>();
  CLI::App* validate = cmd->add_subcommand("validate", "Re-predict the published runs of configs/validation and print the error table");
  validate->add_option("dir", vargs->dir, "Folder of validation files")->capture_default_str();
  validate->add_flag("--json", vargs->json, "Print one JSON object");
  validate->add_option("--svg", vargs->svg, "Write the predicted breakdowns (reported step time dashed) as SVG");
  validate->callback([vargs, action] { *action = [vargs] { return run_validate(*vargs); }; });

  cmd->callback([args, action, cmd] {
    if (cmd->get_subcommands().empty()) *action = [args] { return run_plan(*args); };
  });
}

namespace {
const CommandRegistration kPlanRegistration(110, add_plan_command);
}  // namespace

}  // namespace trex::cli
