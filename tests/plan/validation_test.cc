// The error table: the planner re-predicts every published run in configs/validation and must
// stay within the bounds established when the table was first written (docs/plan.md), so a
// change that makes the model worse on any run, or on average, fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "plan/plan_test_util.h"
#include "trex/plan/validation.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::source_path;

// Signed error (predicted / reported - 1) when the table was established; a run may move by
// at most kBand in either direction. Updating a value here is a deliberate, reviewed change.
const std::map<std::string, double> kEstablished = {
    {"deepseek-v3-h800", +0.066},          {"llama3-405b-128k-16384gpu", -0.271},
    {"llama3-405b-8k-16384gpu", -0.109},   {"llama3-405b-8k-8192gpu", +0.001},
    {"megatron-gpt-1008b", +0.101},        {"megatron-gpt-145.6b", +0.132},
    {"megatron-gpt-18.4b", +0.031},        {"megatron-gpt-310.1b", +0.118},
    {"megatron-gpt-39.1b", +0.119},        {"megatron-gpt-76.1b", +0.142},
};
constexpr double kBand = 0.05;
constexpr double kMaxMeanAbs = 0.12;
constexpr double kMaxAbs = 0.30;

TEST(Validation, ErrorTableStaysWithinEstablishedBounds) {
  std::vector<ValidationCase> cases = load_validation_dir(source_path("configs/validation"));
  ASSERT_EQ(cases.size(), kEstablished.size()) << "a validation file was added or removed: update kEstablished";
  double sum_abs = 0;
  for (const ValidationCase& c : cases) {
    SCOPED_TRACE(c.name);
    ValidationResult r = evaluate(c);
    auto it = kEstablished.find(c.name);
    ASSERT_NE(it, kEstablished.end());
    EXPECT_NEAR(r.error, it->second, kBand) << "predicted " << r.predicted << ", reported " << r.reported;
    EXPECT_LE(std::abs(r.error), kMaxAbs);
    EXPECT_FALSE(c.source.empty());
    sum_abs += std::abs(r.error);
  }
  EXPECT_LE(sum_abs / double(cases.size()), kMaxMeanAbs);
}

TEST(Validation, ReportedFiguresAreReadInTheSourcesUnits) {
  ValidationCase c = load_validation_case(source_path("configs/validation/megatron-gpt-145.6b.toml"));
  EXPECT_NEAR(c.reported_mfu, 148e12 / 312e12, 1e-12);  // 148 TFLOP/s per GPU of 312
  EXPECT_EQ(c.cluster.devices(), 1536);
  EXPECT_EQ(c.model.layers, 80);
  EXPECT_EQ(c.convention, model::FlopConvention::kMegatronHfu);
  ValidationCase v3 = load_validation_case(source_path("configs/validation/deepseek-v3-h800.toml"));
  EXPECT_EQ(v3.reported_mfu, 0);
  EXPECT_NEAR(v3.reported_tokens_per_s_device, 1e12 / (180e3 * 3600), 1);
}

TEST(Validation, BadFileNamesTheField) {
  std::string path = (std::filesystem::temp_directory_path() / "trex-validation-bad.toml").string();
  std::string cluster = source_path("configs/cluster/dgx-a100.toml");
  std::string model = source_path("configs/model/gpt3-175b.toml");
  {
    std::ofstream(path) << "[validation]\nname = \"x\"\nsource = \"s\"\nmodel = \"" << model << "\"\ncluster = \"" << cluster
                        << "\"\nreported_mfu = 0.4\nreported_tflops_per_device = 100\n[run]\nseq_len = 2048\nglobal_batch = 8\n[strategy]\n";
  }
  try {
    load_validation_case(path);
    ADD_FAILURE() << "accepted two reported figures";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("validation.reported_mfu: give exactly one of"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace trex::plan
