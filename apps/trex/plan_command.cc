// trex plan: the full-scale training-step planner (docs/plan.md).
//   trex plan --model M --cluster C --run R --strategy S [--nodes N] [--json] [--svg FILE]
//   trex plan search --model M --cluster C --run R [--top K] [--json]
//   trex plan ladder FILE [--json] [--svg FILE]
//   trex plan validate [DIR] [--json]
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
  cmd->callback([args, action, cmd] {
    if (cmd->get_subcommands().empty()) *action = [args] { return run_plan(*args); };
  });
}

namespace {
const CommandRegistration kRegistration(110, add_plan_command);
}  // namespace

}  // namespace trex::cli
