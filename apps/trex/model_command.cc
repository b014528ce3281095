// trex model info CONFIG [--json] [--seq N]: parameter counts (total, activated) and training
// FLOPs per token of a model config, under every named FLOP convention (docs/model.md).
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/model/accounting.h"
#include "trex/model/config.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct ModelInfoArgs {
  std::string config;
  bool json = false;
  long seq = 0;
};

// 1.573T, 48.9B, 71.6M, 8.4K
std::string count_text(double v) {
  char buf[32];
  if (v >= 1e12)
    std::snprintf(buf, sizeof buf, "%.3fT", v / 1e12);
  else if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1fB", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1fK", v / 1e3);
  return buf;
}

std::string describe_family(const model::ModelConfig& m) {
  std::string s = std::string(model::to_string(m.attention.kind)) + " attention, " +
                  std::to_string(m.attention.heads) + " heads";
  if (m.is_moe())
    s += ", MoE " + std::to_string(m.ffn.routed_experts) + " routed experts (top " + std::to_string(m.ffn.top_k) +
         ") + " + std::to_string(m.ffn.shared_experts) + " shared";
  else
    s += ", dense FFN " + std::to_string(m.ffn.hidden);
  if (m.mhc.streams > 1) s += ", mHC " + std::to_string(m.mhc.streams) + " streams";
  s += ", " + std::to_string(m.layers) + " layers";
  if (m.mtp_depth > 0) s += " + " + std::to_string(m.mtp_depth) + " MTP";
  return s;
}

int run_model_info(const ModelInfoArgs& args) {
  model::ModelConfig m = model::load_model_config(args.config);
  long seq = args.seq > 0 ? args.seq : m.train_seq_len;
  model::ParamCounts p = model::count_parameters(m);
  model::ForwardFlops f = model::forward_flops(m, seq, false);
  bool mtp = m.mtp_depth > 0;
  if (args.json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["file"] = args.config;
    j["params"] = {{"total", p.total()},       {"main", p.total_main()}, {"mtp", p.mtp},
                   {"activated", p.activated}, {"embedding", p.embedding}, {"head", p.head},
                   {"layers", p.layers},       {"routed_experts", p.routed_experts}};
    j["seq"] = seq;
    j["forward_flops_per_token"] = {{"linear", f.linear}, {"core_attention", f.core_attention},
                                    {"indexer", f.indexer}, {"mhc", f.mhc},
                                    {"lm_head", f.lm_head}, {"total", f.total()}};
    nlohmann::ordered_json conv;
    for (model::FlopConvention c : model::all_conventions()) {
      conv[model::to_string(c)] = {{"mtp_off", model::training_flops_per_token(m, seq, c, false)},
                                   {"mtp_on", model::training_flops_per_token(m, seq, c, mtp)}};
    }
    j["training_flops_per_token"] = conv;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model:      %s (%s)\n", m.name.c_str(), args.config.c_str());
  std::printf("shape:      %s\n", describe_family(m).c_str());
  std::printf("parameters: total %s", count_text(p.total()).c_str());
  if (p.mtp > 0) std::printf(" (main %s + MTP %s)", count_text(p.total_main()).c_str(), count_text(p.mtp).c_str());
  std::printf(", activated %s\n", count_text(p.activated).c_str());
  std::printf("            embedding %s, head %s, layers %s", count_text(p.embedding).c_str(),
              p.head > 0 ? count_text(p.head).c_str() : "tied", count_text(p.layers).c_str());
  if (p.routed_experts > 0) std::printf(" (routed experts %s)", count_text(p.routed_experts).c_str());
  std::printf("\n");
  std::printf("forward:    %.4g GFLOP/token at seq %ld, MTP off (linear %.4g, core attention %.4g, indexer %.4g, "
              "mHC %.4g, LM head %.4g)\n",
              f.total() / 1e9, seq, f.linear / 1e9, f.core_attention / 1e9, f.indexer / 1e9, f.mhc / 1e9,
              f.lm_head / 1e9);
  std::printf("training FLOPs per token (forward + backward), GFLOP:\n");
  std::printf("  %-13s %10s %10s  %s\n", "convention", "MTP off", mtp ? "MTP on" : "", "counts");
  for (model::FlopConvention c : model::all_conventions()) {
    std::printf("  %-13s %10.4g", model::to_string(c), model::training_flops_per_token(m, seq, c, false) / 1e9);
    if (mtp)
      std::printf(" %10.4g", model::training_flops_per_token(m, seq, c, true) / 1e9);
    else
      std::printf(" %10s", "");
    std::printf("  %s\n", model::describe(c));
  }
  return 0;
}

}  // namespace

void add_model_command(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("model", "Model configs: sizes and FLOPs");
  cmd->require_subcommand(1);
  auto args = std::make_shared<ModelInfoArgs>();
  CLI::App* info = cmd->add_subcommand(
      "info", "Total and activated parameters and training FLOPs per token of a model config");
  info->add_option("config", args->config, "Model config (TOML), e.g. configs/model/deepseek-v4-pro.toml")
      ->required();
  info->add_flag("--json", args->json, "Print one JSON object");
  info->add_option("--seq", args->seq, "Sequence length for the FLOP figures (default: the config's train_seq_len)")
      ->check(CLI::Range(1L, 1L << 24));
  info->footer("Conventions and formulas: docs/model.md.");
  info->callback([args, action] { *action = [args] { return run_model_info(*args); }; });
}

namespace {
const CommandRegistration kModelRegistration(70, add_model_command);
}  // namespace

}  // namespace trex::cli
