// trex hw probe: measure this machine (peak FMA throughput, STREAM bandwidth, caches, SIMD
// features), write its hardware description (TOML, the format of configs/hw/), and print a
// summary (or one JSON object with --json).
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

struct HwProbeArgs {
  std::string out = "this-machine.toml";
  bool json = false;
  bool quick = false;
  int threads = 0;
};

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string bytes_text(int64_t b) {
  char buf[32];
  if (b >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(int64_t(1) << 30));
  else if (b >= (int64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.0f MiB", double(b) / double(int64_t(1) << 20));
  else
    std::snprintf(buf, sizeof buf, "%.0f KiB", double(b) / 1024);
  return buf;
}

nlohmann::ordered_json to_json(const core::ProbeResult& r, const std::string& out) {
  nlohmann::ordered_json j;
  j["model_name"] = r.model_name;
  j["logical_cpus"] = r.logical_cpus;
  j["physical_cores"] = r.physical_cores;
  j["sockets"] = r.sockets;
  j["threads_per_core"] = r.threads_per_core;
  j["simd"] = r.simd;
  j["clock_hz"] = r.clock_hz;
  j["fma_latency_cycles"] = r.fma_latency_cycles;
  nlohmann::ordered_json fma = nlohmann::ordered_json::array();
  for (const core::FmaPeak& p : r.fma)
    fma.push_back({{"isa", p.isa},
                   {"accumulators", p.accumulators},
                   {"lanes", p.lanes},
                   {"flops_one_core", p.flops_one_core},
                   {"flops_all_cores", p.flops_all_cores}});
  j["fma_peak"] = fma;
  const core::FmaPeak& best = r.best_fma();
  j["peak_flops_fp32_one_core"] = best.flops_one_core;
  j["peak_flops_fp32_all_cores"] = best.flops_all_cores;
  nlohmann::ordered_json caches = nlohmann::ordered_json::array();
  for (const core::CacheInfo& c : r.caches)
    caches.push_back({{"level", c.level},
                      {"type", c.type},
                      {"size_bytes", c.size_bytes},
                      {"line_bytes", c.line_bytes},
                      {"ways", c.ways},
                      {"shared_by", c.shared_by},
                      {"read_bytes_per_s", c.read_bytes_per_s},
                      {"working_set_bytes", c.working_set_bytes}});
  j["caches"] = caches;
  j["memory_bytes"] = r.memory_bytes;
  j["stream"] = {{"array_bytes", r.stream.array_bytes}, {"threads", r.stream.threads},
                 {"repetitions", r.stream.repetitions}, {"copy", r.stream.copy},
                 {"scale", r.stream.scale},             {"add", r.stream.add},
                 {"triad", r.stream.triad},             {"triad_nt", r.stream.triad_nt},
                 {"read", r.stream.read},               {"write", r.stream.write}};
  j["quick"] = r.quick;
  j["seconds"] = r.seconds;
  j["out"] = out;
  return j;
}

void print_summary(const core::ProbeResult& r, const std::string& out) {
  std::printf("cpu:       %s; %d socket%s, %d core%s, %d thread%s per core\n", r.model_name.c_str(), r.sockets,
              r.sockets == 1 ? "" : "s", r.physical_cores, r.physical_cores == 1 ? "" : "s",
              r.threads_per_core, r.threads_per_core == 1 ? "" : "s");
  std::string simd;
  for (const std::string& s : r.simd) simd += (simd.empty() ? "" : " ") + s;
  std::printf("simd:      %s\n", simd.c_str());
  std::printf("clock:     %.2f GHz (dependent integer adds)", r.clock_hz / 1e9);
  if (r.fma_latency_cycles > 0) std::printf(", FMA latency %.1f cycles", r.fma_latency_cycles);
  std::printf("\n");
  bool first = true;
  for (const core::FmaPeak& p : r.fma) {
    std::printf("%s%-6s %2d acc: one core %7.1f GFLOP/s (%.1f flop/cycle), all %d CPUs %7.1f GFLOP/s\n",
                first ? "fp32 peak: " : "           ", p.isa.c_str(), p.accumulators, p.flops_one_core / 1e9,
                p.flops_one_core / r.clock_hz, r.logical_cpus, p.flops_all_cores / 1e9);
    first = false;
  }
  first = true;
  for (const core::CacheInfo& c : r.caches) {
    std::string name = "L" + std::to_string(c.level) + (c.type == "Data" ? "d" : "");
    std::printf("%s%-3s %8s, %2d-way, %d B lines, shared by %d CPU%s", first ? "caches:    " : "           ",
                name.c_str(), bytes_text(c.size_bytes).c_str(), c.ways, c.line_bytes, c.shared_by,
                c.shared_by == 1 ? "" : "s");
    if (c.read_bytes_per_s > 0)
      std::printf("; one-core read %.1f GB/s (%s)", c.read_bytes_per_s / 1e9,
                  bytes_text(c.working_set_bytes).c_str());
    std::printf("\n");
    first = false;
  }
  const core::StreamResult& s = r.stream;
  std::printf("memory:    %s\n", bytes_text(r.memory_bytes).c_str());
  std::printf("STREAM:    %d threads, 3 x %s arrays, best of %d (GB/s)\n", s.threads,
              bytes_text(s.array_bytes).c_str(), s.repetitions);
  std::printf("           copy %.1f  scale %.1f  add %.1f  triad %.1f  triad-nt %.1f  read %.1f  write %.1f\n",
              s.copy / 1e9, s.scale / 1e9, s.add / 1e9, s.triad / 1e9, s.triad_nt / 1e9, s.read / 1e9,
              s.write / 1e9);
  const core::FmaPeak& best = r.best_fma();
  std::printf("ridge:     %.1f flop/byte (all-core %s peak / triad)\n", best.flops_all_cores / s.triad,
              best.isa.c_str());
  std::printf("wrote:     %s (%.1f s%s)\n", out.c_str(), r.seconds, r.quick ? ", quick: rough figures" : "");
}

int run_hw_probe(const HwProbeArgs& args) {
  if (args.threads < 0) throw InputError::field("--threads", "must be >= 0");
  if (args.out.empty()) throw InputError::field("--out", "must not be empty");
  std::filesystem::path parent = std::filesystem::path(args.out).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw InputError::field("--out", "directory " + parent.string() + " does not exist");

  core::ProbeOptions options;
  options.quick = args.quick;
  options.threads = args.threads;
  std::unique_ptr<ProgressBar> bar;
  options.on_step = [&](const std::string&, int done, int total) {
    if (!bar) bar = std::make_unique<ProgressBar>("hw probe", total);
    if (done > bar->done()) bar->advance(done - bar->done());
  };
  core::ProbeResult r = core::probe_hardware(options);
  if (bar) bar->finish();

  std::string header =
      "Hardware description of this machine, written by `trex hw probe" + std::string(args.quick ? " --quick" : "") +
      "` (trex " + version() + ") on " + utc_now() +
      ".\nFormat: docs/hw.md (spec: hardware-and-kernels.md, section 1). Each number has a source and a "
      "confidence;\nthe trailing comments are for reading only.";
  if (args.quick) header += "\nA quick run: small arrays and short loops, so the figures are rough.";
  core::HwDescription d = core::describe(r);
  write_file_atomic(args.out, core::to_toml(d, header));

  if (args.json)
    std::printf("%s\n", to_json(r, args.out).dump().c_str());
  else
    print_summary(r, args.out);
  return 0;
}

}  // namespace

void add_hw_command(CLI::App& app, Action* action) {
  CLI::App* hw = app.add_subcommand("hw", "Hardware: measure this machine");
  hw->require_subcommand(1);
  auto args = std::make_shared<HwProbeArgs>();
  CLI::App* probe = hw->add_subcommand(
      "probe", "Measure peak FMA throughput, memory bandwidth (STREAM), caches and SIMD features; "
               "write a hardware description");
  probe->add_option("--out", args->out, "Where to write the hardware description (TOML)")
      ->capture_default_str();
  probe->add_flag("--json", args->json, "Print one JSON object instead of the summary");
  probe->add_flag("--quick", args->quick, "About a second, with rough figures (for tests)");
  probe->add_option("--threads", args->threads, "Threads for the all-core figures (default: all CPUs)");
  probe->footer("The default run takes about 10 s. Figures: docs/hw.md.");
  probe->callback([args, action] { *action = [args] { return run_hw_probe(*args); }; });
}

namespace {
const CommandRegistration kHwRegistration(50, add_hw_command);
}  // namespace

}  // namespace trex::cli
