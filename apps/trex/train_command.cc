// trex train [--config] FILE [--out DIR] [--steps N] [--resume DIR] [--trace FILE] [--hw FILE]
// [--threads N]: train a V4 model (CPT or SFT) as the config says (docs/train.md); print a line
// every log_every steps, a final summary and the time per category; write metrics, checkpoints
// and the loss curve under the run directory.
//
// MFU needs the machine's fp32 peak: from --hw (a hardware description such as `trex hw probe`
// writes), else measured once by the probe and cached in $XDG_CACHE_HOME/trex (or
// ~/.cache/trex) per thread count, so later runs start at once.
//
// Under mpirun (`mpirun -n 4 trex train FILE`) every rank runs this command: the layout
// comes from [parallel] or --dp/--ep/--etp (docs/dist.md), each rank's threads default to the
// machine's CPUs / the job's ranks on it, and rank 0 prints and writes the run directory.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/core/thread_pool.h"
#include "trex/dist/context.h"
#include "trex/dist/session.h"
#include "trex/train/checkpoint.h"
#include "trex/train/config.h"
#include "trex/train/model_record.h"
#include "trex/train/trainer.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace fs = std::filesystem;

namespace trex::cli {

namespace {

struct TrainArgs {
  std::string config;
  std::string out;
  long steps = 0;
  long stop_after = 0;
  std::string resume;
  std::string trace;
  std::string hw;
  int threads = 0;
  int dp = 0, ep = 0, etp = 0;
};

std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/trex";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/trex";
  return "";
}

// The fp32 peak for MFU and where it came from.
std::pair<double, std::string> machine_peak(const std::string& hw_file, int threads) {
  if (!hw_file.empty()) {
    core::HwDescription d = core::load_hw_description(hw_file);
    return {d.peak.flops_fp32.value, hw_file};
  }
  std::string dir = cache_dir();
  std::string cached = dir.empty() ? "" : dir + "/hw-probe-t" + std::to_string(threads) + ".toml";
  if (!cached.empty() && fs::exists(cached)) {
    try {
      return {core::load_hw_description(cached).peak.flops_fp32.value, cached + " (cached probe)"};
    } catch (const InputError&) {
      // A damaged cache is measured again below.
    }
  }
  std::fprintf(stderr, "train: measuring this machine's peak once (trex hw probe, about 10 s)...\n");
  core::ProbeOptions po;
  po.threads = threads;
  core::ProbeResult r = core::probe_hardware(po);
  core::HwDescription d = core::describe(r);
  if (!cached.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!ec) write_file_atomic(cached, core::to_toml(d, "Written by trex train: the probe of this machine for MFU."));
  }
  return {d.peak.flops_fp32.value, cached.empty() ? "probe" : cached + " (probed now)"};
}

int run_train(const TrainArgs& args, dist::Session& session);

int run_train(const TrainArgs& args) {
  // Threads per rank: the CPUs shared by this machine's ranks, unless the user chose.
  if (args.threads == 0 && dist::Session::launched() && !std::getenv("TREX_THREADS")) {
    int cpus = int(std::thread::hardware_concurrency());
    setenv("TREX_THREADS", std::to_string(std::max(1, cpus / dist::Session::local_ranks())).c_str(), 1);
  }
  dist::Session session;
  if (session.world() == 1) return run_train(args, session);
  // Several ranks: an error on one must end them all (the others would wait for it forever).
  try {
    return run_train(args, session);
  } catch (const std::exception& e) {
    session.abort(e.what(), dynamic_cast<const InputError*>(&e) ? kUsageExitCode : 1);
  }
}

int run_train(const TrainArgs& args, dist::Session& session) {
  if (args.threads < 0) throw InputError::field("--threads", "must be >= 0");
  if (args.steps < 0) throw InputError::field("--steps", "must be >= 1");
  if (args.threads > 0) setenv("TREX_THREADS", std::to_string(args.threads).c_str(), 1);
  std::string config_path = args.config;
  std::string out = args.out;
  std::string ckpt;
  if (!args.resume.empty()) {
    ckpt = train::resolve_checkpoint(args.resume);
    if (config_path.empty()) config_path = train::read_checkpoint_state(ckpt).value("config", std::string());
    // A checkpoint lives in RUN/checkpoints/step-N: the run continues in RUN.
    if (out.empty()) out = fs::path(ckpt).parent_path().parent_path().string();
  }
  if (config_path.empty()) throw InputError::field("--config", "required (or --resume with a checkpoint)");
  // --resume alone: the train config comes from the checkpoint's recorded path, and the model
  // file it names may have changed since, be gone or no longer parse; the run goes on with the
  // model the checkpoint records (one warning), as trex serve and generate load it
  // (checkpoint_model_by_path). A checkpoint without a record needs the file. An explicit
  // --config whose model differs is refused by run_training.
  train::TrainConfig config;
  if (!ckpt.empty() && args.config.empty()) {
    config = train::load_train_config_without_model(config_path);
    const std::string state_file = (fs::path(ckpt) / "state.json").string();
    const std::optional<model::ModelConfig> recorded =
        train::recorded_model(train::read_checkpoint_state(ckpt), state_file);
    const train::CheckpointModel m = train::checkpoint_model_by_path(
        recorded, config.model_file, config.model_file + " (through " + config_path + ")", ckpt, "--resume");
    // Without a record, run_training gives the one warning that the model cannot be checked.
    if (recorded && !m.warning.empty() && session.rank() == 0)
      std::fprintf(stderr, "trex: warning: %s\n", m.warning.c_str());
    train::set_train_model(config, m.model);
  } else {
    config = train::load_train_config(config_path);
  }
  if (out.empty()) out = "runs/" + fs::path(config_path).stem().string();

  // The layout, checked before any work; the flags override [parallel].
  dist::LayoutRequest request;
  request.dp = args.dp ? args.dp : config.dp;
  request.ep = args.ep ? args.ep : config.ep;
  request.etp = args.etp ? args.etp : config.etp;
  if (args.dp) request.dp_field = "--dp";
  if (args.ep) request.ep_field = "--ep";
  if (args.etp) request.etp_field = "--etp";
  for (auto* f : {&request.dp_field, &request.ep_field, &request.etp_field, &request.micro_batches_field})
    if (f->rfind("--", 0) != 0) *f = config_path + ": " + *f;
  if (config.dist_timeout_s > 0) session.set_timeout(config.dist_timeout_s);
  dist::Context context(session, request, config.model, config.micro_batches);

  int threads = core::default_thread_pool().num_threads();
  // Every rank measures the same peak; under mpirun the probe would contend, so rank 0's
  // cached or given figure is used when there is one and the probe runs on rank 0 alone.
  double peak = 0;
  std::string peak_source;
  if (session.world() == 1 || context.rank() == 0) std::tie(peak, peak_source) = machine_peak(args.hw, threads);
  context.world().barrier("start");

  train::TrainOptions o;
  o.out_dir = out;
  o.steps = args.steps;
  o.stop_after = args.stop_after;
  o.resume = args.resume;
  o.trace_path = args.trace;
  // Under mpirun the ranks share this machine, each with `threads` threads: the job's peak is
  // the sum of theirs (one probe at the per-rank thread count, times the ranks).
  peak *= session.world();
  if (session.world() > 1) peak_source += " x " + std::to_string(session.world()) + " ranks";
  o.peak_flops = peak;
  o.peak_source = peak_source;
  o.dist = &context;
  train::TrainResult r;
  try {
    r = train::run_training(config, o);
  } catch (const train::TrainingStopped& e) {
    std::fprintf(stderr, "trex: error: %s\n", e.what());
    return 1;
  }

  if (context.rank() != 0) return 0;
  double first = 0, last = 0;
  for (size_t i = 0; i < r.losses.size(); ++i)
    if (!r.skipped[i]) {
      if (first == 0) first = r.losses[i];
      last = r.losses[i];
    }
  std::printf("done: steps %lld..%lld, loss %.4f -> %.4f, %lld skipped, %.0f tokens/s, MFU %.1f%% of %.1f GFLOP/s fp32 "
              "(%s), %d threads%s, median step %.3f s (optimizer %.3f s)\n",
              static_cast<long long>(r.first_step), static_cast<long long>(r.last_step), first, last,
              static_cast<long long>(r.skipped_steps), r.tokens_per_s, 100 * r.mfu, peak / 1e9,
              peak_source.c_str(), threads, session.world() > 1 ? " per rank" : "", r.median_step_s,
              r.median_optimizer_s);
  if (r.median_swap_io_s > 0)
    std::printf("swap I/O per step (median): %.3f s, hidden %.3f s, exposed %.3f s (%.0f%% hidden); %lld steps "
                "redone after the backward (clipped with the current norm)\n",
                r.median_swap_io_s, r.median_swap_hidden_s, r.median_swap_exposed_s,
                100 * r.median_swap_hidden_s / r.median_swap_io_s, static_cast<long long>(r.swap_redone_steps));
  for (size_t q = 0; q < r.median_swap_rank_io_s.size(); ++q)
    std::printf("  rank %zu: swap I/O %.3f s, exposed %.3f s (%.0f%% hidden)\n", q, r.median_swap_rank_io_s[q],
                r.median_swap_rank_exposed_s[q],
                r.median_swap_rank_io_s[q] > 0
                    ? 100 * (1 - r.median_swap_rank_exposed_s[q] / r.median_swap_rank_io_s[q])
                    : 100.0);
  std::printf("time per category (training thread):\n%s", r.trace.to_string().c_str());
  std::printf("wrote: %s/metrics.jsonl, %s/loss.svg, %s%s%s\n", out.c_str(), out.c_str(), r.checkpoint.c_str(),
              args.trace.empty() ? "" : ", ", args.trace.c_str());
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a V4 model: CPT or SFT with checkpoints, metrics and MFU");
  // Also positional (`trex train CONFIG`), the form `mpirun -n N trex train CONFIG` is usually written in.
  cmd->add_option("config,--config", args->config, "Train config (TOML, configs/train/)");
  cmd->add_option("--out", args->out, "Run directory (default runs/<config name>; with --resume the checkpoint's run)");
  cmd->add_option("--steps", args->steps, "Total steps, overriding the config (also the schedule's length)");
  cmd->add_option("--stop-after", args->stop_after, "Stop after this step (the schedule still spans --steps)");
  cmd->add_option("--resume", args->resume, "Continue bit for bit from a checkpoint or the newest one of a run directory");
  cmd->add_option("--trace", args->trace, "Also write the per-operator Chrome trace JSON here");
  cmd->add_option("--hw", args->hw, "Hardware description with the fp32 peak for MFU (default: probe once, cached)");
  cmd->add_option("--threads", args->threads,
                  "Compute threads per rank (default: TREX_THREADS, else all CPUs / ranks on this machine)");
  cmd->add_option("--dp", args->dp, "Under mpirun: expert-data-parallel size (default world / (ep x etp))");
  cmd->add_option("--ep", args->ep, "Under mpirun: expert-parallel size, dividing the routed experts (default 1)");
  cmd->add_option("--etp", args->etp, "Under mpirun: expert-tensor-parallel size (default 1)");
  cmd->footer("Config keys, data formats, checkpoint layout and metrics: docs/train.md; mpirun: docs/dist.md.");
  cmd->callback([args, action] { *action = [args] { return run_train(*args); }; });
}

namespace {
const CommandRegistration kTrainRegistration(80, add_train_command);
}  // namespace

}  // namespace trex::cli
