// Parameter counts and FLOPs per token against the published sizes and the reference table
// of spec/deepseek-v4.md (sections 1 and 13).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "trex/model/accounting.h"
#include "trex/model/config.h"

namespace trex::model {
namespace {

ModelConfig shipped(const std::string& name) {
  return load_model_config(std::string(TREX_SOURCE_DIR) + "/configs/model/" + name + ".toml");
}

// Within `rel` of the published figure.
void expect_near_rel(double got, double published, double rel) {
  EXPECT_NEAR(got / published, 1.0, rel) << "got " << got << ", published " << published;
}

TEST(Accounting, V4ProMatchesPublishedSizesWithinTwoPercent) {
  ParamCounts p = count_parameters(shipped("deepseek-v4-pro"));
  expect_near_rel(p.total(), 1.6e12, 0.02);
  expect_near_rel(p.activated, 49e9, 0.02);
  // The spec's own figures from the shape list, to four digits.
  EXPECT_NEAR(p.total_main() / 1e12, 1.573, 0.0005);
  EXPECT_NEAR(p.mtp / 1e9, 25.8, 0.05);
  EXPECT_NEAR(p.activated / 1e9, 48.85, 0.05);
}

TEST(Accounting, V4FlashMatchesPublishedSizesWithinTwoPercent) {
  ParamCounts p = count_parameters(shipped("deepseek-v4-flash"));
  expect_near_rel(p.total_main(), 284e9, 0.02);
  expect_near_rel(p.activated, 13e9, 0.025);  // published "13B" is rounded; the shapes give 13.27B
  EXPECT_NEAR(p.total_main() / 1e9, 284.3, 0.05);
  EXPECT_NEAR(p.mtp / 1e9, 6.6, 0.05);
  EXPECT_NEAR(p.activated / 1e9, 13.3, 0.05);
}

TEST(Accounting, TrexSizedV4ConfigsMatchTheSpecTable) {
  ParamCounts micro = count_parameters(shipped("v4-micro"));
  EXPECT_NEAR(micro.total_main() / 1e6, 71.6, 0.05);
  EXPECT_NEAR(micro.mtp / 1e6, 8.2, 0.05);
  EXPECT_NEAR(micro.activated / 1e6, 23.3, 0.06);  // the shapes give 23.35M; the table rounds down
  ParamCounts nano = count_parameters(shipped("v4-nano"));
  EXPECT_NEAR(nano.total() / 1e6, 8.4, 0.05);
  EXPECT_NEAR(nano.activated / 1e6, 3.8, 0.05);
}

TEST(Accounting, DenseAndV3ModelsMatchPublishedSizes) {
  expect_near_rel(count_parameters(shipped("gpt3-175b")).total(), 175e9, 0.01);
  expect_near_rel(count_parameters(shipped("llama3-405b")).total(), 405e9, 0.01);
  ParamCounts v3 = count_parameters(shipped("deepseek-v3"));
  expect_near_rel(v3.total_main(), 671e9, 0.01);
  expect_near_rel(v3.activated, 37e9, 0.02);
}

struct FlopRow {
  const char* model;
  long seq;
  int decimals;  // digits after the point in the table's small columns
  double linear, core_attn, indexer, mhc, head;
};

TEST(Accounting, ForwardFlopsMatchTheSpecReferenceTable) {
  // spec/deepseek-v4.md section 13, GFLOP per token, MTP off.
  const FlopRow rows[] = {
      {"deepseek-v4-pro", 4096, 2, 95.68, 6.17, 0.25, 0.21, 1.85},
      {"deepseek-v4-pro", 8192, 2, 95.68, 8.33, 0.51, 0.21, 1.85},
      {"deepseek-v4-flash", 8192, 2, 25.41, 2.03, 0.36, 0.08, 1.06},
      {"v4-micro", 2048, 4, 0.0366, 0.0029, 0.0008, 0.0020, 0.0084},
      {"v4-nano", 512, 5, 0.0051, 0.00016, 0.00003, 0.0005, 0.0021},
  };
  for (const FlopRow& r : rows) {
    SCOPED_TRACE(std::string(r.model) + " seq " + std::to_string(r.seq));
    ForwardFlops f = forward_flops(shipped(r.model), r.seq, false);
    // The table rounds to its last printed digit; some of its small entries are rounded a little
    // further (0.36 for 0.355), hence the 2% on top of half a unit in the last place.
    double unit = 0.5 * std::pow(10.0, -r.decimals);
    auto tol = [unit](double v) { return unit + 0.02 * v; };
    EXPECT_NEAR(f.linear / 1e9, r.linear, tol(r.linear));
    EXPECT_NEAR(f.core_attention / 1e9, r.core_attn, tol(r.core_attn));
    EXPECT_NEAR(f.indexer / 1e9, r.indexer, tol(r.indexer));
    EXPECT_NEAR(f.mhc / 1e9, r.mhc, tol(r.mhc));
    EXPECT_NEAR(f.lm_head / 1e9, r.head, tol(r.head));
  }
}

TEST(Accounting, ConventionsMatchTheSpecWorkedExample) {
  // spec/swap-optimizer-and-parallelism.md section 9: V4-Pro at 8192, MTP off.
  ModelConfig pro = shipped("deepseek-v4-pro");
  EXPECT_NEAR(training_flops_per_token(pro, 8192, FlopConvention::kTrex, false) / 1e9, 319.7, 0.1);
  EXPECT_NEAR(training_flops_per_token(pro, 8192, FlopConvention::kSixN, false) / 1e9, 293.1, 0.1);
  EXPECT_NEAR(training_flops_per_token(pro, 8192, FlopConvention::kMegatron, false) / 1e9, 490, 1.0);
  EXPECT_NEAR(training_flops_per_token(pro, 8192, FlopConvention::kDenseAttention, false) / 1e9, 686.1, 0.2);
}

TEST(Accounting, MegatronHfuReproducesNarayananFormula) {
  // 96 B s L h^2 (1 + s/(6h) + V/(16 L h)) per batch of B sequences, GPT-3 175B shape with
  // Megatron's padded vocabulary; biases and norms are not in the formula, so allow 0.2%.
  ModelConfig m = shipped("gpt3-175b");
  m.vocab = 51200;
  double h = m.hidden, L = m.layers, s = 2048, V = m.vocab;
  double per_token = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  EXPECT_NEAR(training_flops_per_token(m, 2048, FlopConvention::kMegatronHfu, false) / per_token, 1.0, 0.002);
}

TEST(Accounting, KeySetClosedFormsAgreeWithDirectSums) {
  ModelConfig pro = shipped("deepseek-v4-pro");
  for (long seq : {1L, 5L, 127L, 128L, 129L, 4095L, 5000L}) {
    for (int layer : {0, 2, -1}) {
      int ratio = layer < 0 ? 0 : pro.compress_ratio(layer);
      double direct = 0;
      for (long t = 0; t < seq; ++t) {
        double keys = std::min<long>(t + 1, pro.attention.window);
        long visible = (t + 1) / (ratio > 0 ? ratio : 1);
        if (ratio == 128) keys += double(visible);
        if (ratio == 4) keys += double(std::min<long>(visible, pro.indexer.top_k));
        direct += keys;
      }
      EXPECT_NEAR(mean_attended_keys(pro, layer, seq), direct / double(seq), 1e-9) << seq << " " << layer;
    }
  }
  ModelConfig gpt = shipped("gpt3-175b");
  EXPECT_DOUBLE_EQ(mean_attended_keys(gpt, 0, 2048), 2049.0 / 2);
}

}  // namespace
}  // namespace trex::model
