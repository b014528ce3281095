// trex plan: the full-scale training-step planner (docs/plan.md).
//   trex plan --model M --cluster C --run R --strategy S [--nodes N] [--json] [--svg FILE]
//   trex plan search --model M --cluster C --run R [--top K] [--json]
//   trex plan ladder FILE [--json] [--svg FILE]
//   trex plan validate [DIR] [--json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/predict.h"
#include "trex/plan/report.h"
#include "trex/plan/strategy.h"
#include "trex/plan/validation.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct PlanArgs {
  std::string model, cluster, run, strategy, svg;
  long nodes = 0;
  bool json = false;
};

void require(const std::string& value, const char* flag) {
  if (value.empty()) throw InputError::field(flag, "missing (trex plan needs --model, --cluster, --run and --strategy)");
}

int run_plan(const PlanArgs& a) {
  require(a.model, "--model");
  require(a.cluster, "--cluster");
  require(a.run, "--run");
  require(a.strategy, "--strategy");
  model::ModelConfig m = model::load_model_config(a.model);
  plan::Cluster c = plan::load_cluster(a.cluster);
  if (a.nodes > 0) plan::set_nodes(c, a.nodes);
  plan::Run r = plan::load_run(a.run);
  plan::Strategy s = plan::load_strategy(a.strategy);
  plan::Prediction p = plan::predict(m, c, r, s);
  if (!a.svg.empty()) {
    plan::ChartBar bar{m.name + " " + plan::strategy_text(p.strategy).substr(0, 30), p.time, 0, ""};
    write_file_atomic(a.svg, plan::breakdown_svg("trex plan: step time breakdown", {bar}));
  }
  if (a.json) {
    std::printf("%s\n", plan::prediction_json(m, c, r, p).dump().c_str());
    return 0;
  }
  std::printf("%s", plan::format_prediction(m, c, r, p).c_str());
  return 0;
}

struct ValidateArgs {
  std::string dir = "configs/validation";
  std::string svg;
  bool json = false;
};

int run_validate(const ValidateArgs& a) {
  std::vector<plan::ValidationCase> cases = plan::load_validation_dir(a.dir);
  if (cases.empty()) throw InputError(a.dir, 0, "no validation files (*.toml)");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<plan::ChartBar> bars;
  double sum_abs = 0, worst = 0;
  if (!a.json)
    std::printf("%-28s %6s %-12s %10s %10s %8s  %s\n", "run", "devices", "convention", "reported", "predicted", "error",
                "strategy");
  for (const plan::ValidationCase& c : cases) {
    plan::ValidationResult r = plan::evaluate(c);
    sum_abs += std::abs(r.error);
    worst = std::max(worst, std::abs(r.error));
    std::string conv = r.mfu ? model::to_string(c.convention) : "tokens/s/dev";
    if (a.json) {
      rows.push_back({{"name", c.name},
                      {"source", c.source},
                      {"devices", c.cluster.devices()},
                      {"unit", r.mfu ? "mfu" : "tokens_per_s_per_device"},
                      {"convention", r.mfu ? model::to_string(c.convention) : ""},
                      {"reported", r.reported},
                      {"predicted", r.predicted},
                      {"error", r.error},
                      {"step_s", r.prediction.time.step},
                      {"fits", r.prediction.memory.fits}});
    } else {
      char rep[32], pred[32];
      if (r.mfu) {
        std::snprintf(rep, sizeof rep, "%.1f%%", 100 * r.reported);
        std::snprintf(pred, sizeof pred, "%.1f%%", 100 * r.predicted);
      } else {
        std::snprintf(rep, sizeof rep, "%.0f", r.reported);
        std::snprintf(pred, sizeof pred, "%.0f", r.predicted);
      }
      std::printf("%-28s %6ld %-12s %10s %10s %+7.1f%%  %s%s\n", c.name.c_str(), c.cluster.devices(), conv.c_str(), rep,
                  pred, 100 * r.error, plan::strategy_text(r.prediction.strategy).substr(0, 40).c_str(),
                  r.prediction.memory.fits ? "" : "  (predicted not to fit)");
    }
    char note[64];
    std::snprintf(note, sizeof note, "(%+.0f%%)", 100 * r.error);
    bars.push_back({c.name, r.prediction.time, r.prediction.time.step * (1 + r.error), note});
  }
  double mean_abs = sum_abs / double(cases.size());
  if (!a.svg.empty())
    write_file_atomic(a.svg, plan::breakdown_svg("trex plan validate: predicted step breakdown, dashed = reported", bars));
  if (a.json) {
    nlohmann::ordered_json j;
    j["runs"] = rows;
    j["mean_abs_error"] = mean_abs;
    j["max_abs_error"] = worst;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("mean |error| %.1f%%, max |error| %.1f%% over %zu runs\n", 100 * mean_abs, 100 * worst, cases.size());
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("plan", "Full-scale training-step planner: memory, step time, MFU, strategy search");
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--model", args->model, "Model config (configs/model/*.toml)");
  cmd->add_option("--cluster", args->cluster, "Cluster description (configs/cluster/*.toml)");
  cmd->add_option("--run", args->run, "Run description (configs/run/*.toml)");
  cmd->add_option("--strategy", args->strategy, "Parallel strategy (configs/strategy/*.toml)");
  cmd->add_option("--nodes", args->nodes, "Override the cluster's node count")->check(CLI::Range(1L, 1L << 20));
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->add_option("--svg", args->svg, "Also write the step-time breakdown as an SVG bar chart");
  cmd->footer("Model, formulas and assumptions: docs/plan.md.");
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
const CommandRegistration kRegistration(110, add_plan_command);
}  // namespace

}  // namespace trex::cli
