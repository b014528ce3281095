#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "nlohmann/json.hpp"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/util/subprocess.h"

namespace trex::core {
namespace {

// Timings vary with the machine and its load: the tests ask only for positive, finite figures.
bool sane(double v) { return std::isfinite(v) && v > 0; }

ProcessOptions timeout(double seconds) {
  ProcessOptions o;
  o.timeout_s = seconds;
  return o;
}

std::string temp_dir() {
  std::string dir = std::filesystem::temp_directory_path() / ("trex_probe_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(HwProbe, QuickProbeGivesSaneFiguresAndADescriptionThatReadsBack) {
  ProbeOptions options;
  options.quick = true;
  int steps = 0;
  options.on_step = [&](const std::string&, int done, int total) {
    EXPECT_LE(done, total);
    ++steps;
  };
  ProbeResult r = probe_hardware(options);
  EXPECT_GT(steps, 5);
  EXPECT_GE(r.logical_cpus, 1);
  EXPECT_GE(r.physical_cores, 1);
  EXPECT_FALSE(r.model_name.empty());
  EXPECT_TRUE(sane(r.clock_hz));
  ASSERT_FALSE(r.fma.empty());
  for (const FmaPeak& p : r.fma) {
    EXPECT_TRUE(sane(p.flops_one_core)) << p.isa;
    EXPECT_TRUE(sane(p.flops_all_cores)) << p.isa;
  }
  for (const CacheInfo& c : r.caches) {
    EXPECT_GT(c.size_bytes, 0);
    EXPECT_GT(c.line_bytes, 0);
    EXPECT_TRUE(sane(c.read_bytes_per_s)) << "L" << c.level;
  }
  for (double bw : {r.stream.copy, r.stream.scale, r.stream.add, r.stream.triad, r.stream.triad_nt,
                    r.stream.read, r.stream.write})
    EXPECT_TRUE(sane(bw));
  EXPECT_EQ(r.stream.threads, r.logical_cpus);

  HwDescription d = describe(r);
  EXPECT_EQ(d.device.kind, "cpu");
  EXPECT_NEAR(d.peak.flops_fp32.value, r.best_fma().flops_all_cores, 1e-3 * r.best_fma().flops_all_cores);
  EXPECT_EQ(d.peak.flops_fp32.confidence, Confidence::kMeasured);
  HwDescription back = parse_hw_description(to_toml(d, "probe"), "probe.toml");
  EXPECT_TRUE(back == d) << to_toml(d);
}

TEST(HwProbe, CommandWritesALoadableFileAndJson) {
  std::string dir = temp_dir();
  std::string out = dir + "/machine.toml";
  ProcessResult p = run_process({TREX_BINARY, "hw", "probe", "--quick", "--json", "--out", out}, timeout(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_TRUE(sane(j["peak_flops_fp32_one_core"].get<double>()));
  EXPECT_TRUE(sane(j["peak_flops_fp32_all_cores"].get<double>()));
  EXPECT_TRUE(sane(j["stream"]["triad"].get<double>()));
  EXPECT_TRUE(sane(j["stream"]["copy"].get<double>()));
  EXPECT_EQ(j["out"], out);
  HwDescription d = load_hw_description(out);
  EXPECT_EQ(d.device.kind, "cpu");
  EXPECT_TRUE(sane(d.device_memory().bw_read->value));
  ASSERT_TRUE(d.stream.has_value());
  EXPECT_TRUE(sane(d.stream->triad->value));

  // The human summary names what it measured and where it wrote.
  ProcessResult h = run_process({TREX_BINARY, "hw", "probe", "--quick", "--out", out}, timeout(120));
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("fp32 peak:"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("triad"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("wrote:     " + out), std::string::npos) << h.out;
  std::filesystem::remove_all(dir);
}

TEST(HwProbe, BadArgumentsGiveOneLineErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const Case cases[] = {
      {{"hw", "probe", "--quick", "--out", "/nonexistent-dir/x.toml"}, "--out: directory /nonexistent-dir does not exist"},
      {{"hw", "probe", "--quick", "--threads", "-1"}, "--threads: must be >= 0"},
      {{"hw", "probe", "--bogus"}, "error"},
      {{"hw"}, "error"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {TREX_BINARY};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    ProcessResult p = run_process(argv, timeout(60));
    EXPECT_EQ(p.exit_code, 2) << c.expect;
    EXPECT_NE(p.err.find(c.expect), std::string::npos) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
  }
}

}  // namespace
}  // namespace trex::core
