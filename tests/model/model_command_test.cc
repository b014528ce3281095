// `trex model info` run as a subprocess: the published sizes in JSON, one-line errors.
#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

ProcessResult trex_run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 60;
  o.cwd = TREX_SOURCE_DIR;
  return run_process(argv, o);
}

TEST(ModelInfoCommand, JsonGivesThePublishedV4Sizes) {
  ProcessResult r = trex_run({"model", "info", "configs/model/deepseek-v4-flash.toml", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["params"]["main"].get<double>() / 284e9, 1.0, 0.02);
  EXPECT_NEAR(j["params"]["activated"].get<double>() / 13e9, 1.0, 0.025);
  EXPECT_EQ(j["seq"].get<long>(), 8192);
  EXPECT_NEAR(j["training_flops_per_token"]["trex"]["mtp_off"].get<double>() / 1e9, 86.8, 0.1);
}

TEST(ModelInfoCommand, TableNamesEveryConvention) {
  ProcessResult r = trex_run({"model", "info", "configs/model/deepseek-v4-pro.toml", "--seq", "4096"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("total 1.599T (main 1.573T + MTP 25.8B), activated 48.9B"), std::string::npos) << r.out;
  for (const char* c : {"trex", "6n", "megatron", "dense-attn", "megatron-hfu"})
    EXPECT_NE(r.out.find(std::string("  ") + c + " "), std::string::npos) << c;
  EXPECT_NE(r.out.find("312.5"), std::string::npos) << r.out;  // 3 F_fwd at 4096, spec section 13
}

TEST(ModelInfoCommand, BadConfigIsOneLineAndExitTwo) {
  ProcessResult r = trex_run({"model", "info", "configs/model/does-not-exist.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("does-not-exist.toml"), std::string::npos);
}

}  // namespace
}  // namespace trex
