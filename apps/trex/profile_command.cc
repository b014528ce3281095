// trex profile analyze TRACE... [--hw FILE|probe] [--json] [--html FILE]: the anatomy of a
// training step (docs/profile.md) from trex, PyTorch/Kineto or Ascend msprof traces.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/profile/anatomy.h"
#include "trex/profile/report.h"
#include "trex/profile/trace_reader.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct ProfileArgs {
  std::vector<std::string> traces;
  std::string hw;
  std::string html;
  bool json = false;
  int top = 15;
  double head_cover = 0.8;
  double tail_us = 20;
};

int run_profile_analyze(const ProfileArgs& args) {
  if (args.traces.empty()) throw InputError::field("TRACE", "at least one trace file is required");
  if (!(args.head_cover > 0 && args.head_cover <= 1)) throw InputError::field("--head-cover", "must be in (0, 1]");
  if (!(args.tail_us > 0)) throw InputError::field("--tail-us", "must be > 0");
  if (args.top < 0) throw InputError::field("--top", "must be >= 0");

  // Everything is read and checked before anything is written.
  std::vector<profile::KernelTrace> traces;
  for (const std::string& path : args.traces) traces.push_back(profile::read_trace(path));

  profile::AnatomyOptions options;
  options.head_cover = args.head_cover;
  options.tail_us = args.tail_us;
  if (args.hw == "probe") {
    std::fprintf(stderr, "profile: measuring this machine (trex hw probe, about 10 s)...\n");
    options.roofline = profile::roofline_of(core::describe(core::probe_hardware()));
  } else if (!args.hw.empty()) {
    options.roofline = profile::roofline_of(core::load_hw_description(args.hw));
    if (!options.roofline) throw InputError(args.hw, 0, "no memory bandwidth (stream.triad or bw_read) to draw the roofline");
  }
  profile::Anatomy anatomy = profile::analyze(traces, options);

  if (!args.html.empty()) write_file_atomic(args.html, profile::anatomy_html(anatomy));
  if (args.json)
    std::printf("%s\n", profile::anatomy_json(anatomy).dump().c_str());
  else
    std::printf("%s%s", profile::anatomy_text(anatomy, args.top).c_str(),
                args.html.empty() ? "" : ("wrote: " + args.html + "\n").c_str());
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, Action* action) {
  CLI::App* profile = app.add_subcommand("profile", "Trace anatomy: heavy head, fragmented tail, regimes, routes");
  profile->require_subcommand(1);
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* analyze = profile->add_subcommand(
      "analyze", "Read trex Chrome traces, PyTorch/Kineto JSON traces or Ascend msprof op_summary CSVs and "
                 "report the step's anatomy");
  analyze->add_option("TRACE", args->traces, "Trace files (formats told apart by content)")->required();
  analyze->add_option("--hw", args->hw,
                      "Hardware description for the roofline (configs/hw/*.toml, `trex hw probe` output), "
                      "or 'probe' to measure this machine now");
  analyze->add_flag("--json", args->json, "Print one JSON object instead of the summary");
  analyze->add_option("--html", args->html, "Also write a self-contained HTML page with the plots");
  analyze->add_option("--top", args->top, "Kernels listed in the summary")->capture_default_str();
  analyze->add_option("--head-cover", args->head_cover, "Share of kernel time the heavy head covers")
      ->capture_default_str();
  analyze->add_option("--tail-us", args->tail_us, "Launches shorter than this form the fragmented tail (us)")
      ->capture_default_str();
  analyze->footer("Definitions and output fields: docs/profile.md.");
  analyze->callback([args, action] { *action = [args] { return run_profile_analyze(*args); }; });
}

namespace {
const CommandRegistration kProfileRegistration(100, add_profile_command);
}  // namespace

}  // namespace trex::cli
