// `trex profile analyze` as a user meets it: the real binary on the shipped fixtures of each
// format, its JSON and HTML outputs, and bad input (one line naming the file, exit 2, nothing
// overwritten).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::profile {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string data(const std::string& name) { return std::string(TREX_SOURCE_DIR) + "/tests/profile/data/" + name; }

ProcessResult run_trex(std::vector<std::string> args) {
  args.insert(args.begin(), TREX_BINARY);
  ProcessOptions options;
  options.timeout_s = 120;
  ProcessResult r = run_process(args, options);
  EXPECT_FALSE(r.timed_out);
  return r;
}

std::string scratch(const std::string& name) {
  return (fs::temp_directory_path() / ("trex_profile_cli_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(ProfileCommand, SummaryOfEachFormat) {
  ProcessResult r = run_trex({"profile", "analyze", data("msprof_op_summary.csv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("heavy head:"));
  EXPECT_THAT(r.out, HasSubstr("SparseAttnSharedkvGrad"));
  EXPECT_THAT(r.out, HasSubstr("launches under 20 us"));
  EXPECT_THAT(r.out, HasSubstr("vector-compute share"));

  r = run_trex({"profile", "analyze", data("kineto_trace.json"), "--hw", std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(kineto)"));
  EXPECT_THAT(r.out, HasSubstr("compute-bound"));
  EXPECT_THAT(r.out, HasSubstr("overlap / schedule"));

  r = run_trex({"profile", "analyze", data("trex_trace.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 steps"));
  EXPECT_THAT(r.out, HasSubstr("moe.experts.w1w3"));
}

TEST(ProfileCommand, JsonAndHtml) {
  std::string html = scratch("anatomy.html");
  ProcessResult r = run_trex({"profile", "analyze", data("trex_trace.json"), data("msprof_op_summary.csv"), "--json",
                              "--html", html, "--hw", std::string(TREX_SOURCE_DIR) + "/configs/hw/ascend-910c.toml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "trex.profile.anatomy");
  EXPECT_EQ(j["traces"].size(), 2u);
  EXPECT_GT(j["kernels"].size(), 10u);
  EXPECT_GT(j["heavy_head"]["kernels"].get<int>(), 0);
  EXPECT_TRUE(j["roofline"].is_object());
  std::string page = read_file(html);
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("Roofline"));
  // Self-contained: no scripts, stylesheets or images from elsewhere.
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
  fs::remove(html);
}

TEST(ProfileCommand, BadTraceIsOneLineExitTwoAndNothingOverwritten) {
  std::string html = scratch("keep.html");
  std::ofstream(html) << "earlier page";
  std::string truncated = scratch("truncated.json");
  std::string full = read_file(data("kineto_trace.json"));
  std::ofstream(truncated) << full.substr(0, full.size() / 3);
  ProcessResult r = run_trex({"profile", "analyze", data("trex_trace.json"), truncated, "--html", html});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(truncated));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(read_file(html), "earlier page");

  r = run_trex({"profile", "analyze", "/nonexistent/trace.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/trace.json"));

  std::string unknown = scratch("notes.txt");
  std::ofstream(unknown) << "hello\n";
  r = run_trex({"profile", "analyze", unknown});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown trace format"));

  r = run_trex({"profile", "analyze", data("trex_trace.json"), "--hw", "/nonexistent/hw.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/hw.toml"));
  for (const std::string& p : {html, truncated, unknown}) fs::remove(p);
}

}  // namespace
}  // namespace trex::profile
