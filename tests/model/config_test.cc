// Model config reading: every shipped file loads; bad files are refused with file, line and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "trex/model/config.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

const char* kNano = R"([model]
name = "t"
vocab = 100
hidden = 64
layers = 2
[attention]
kind = "v4"
heads = 4
head_dim = 16
rope_dims = 8
q_lora_rank = 32
window = 8
o_groups = 2
o_lora_rank = 16
compress_ratios = [4, 128]
[indexer]
heads = 2
head_dim = 8
top_k = 4
[mhc]
streams = 4
[ffn]
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 32
hash_layers = 1
)";

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "m.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(ModelConfig, EveryShippedConfigLoads) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TREX_SOURCE_DIR) + "/configs/model")) {
    SCOPED_TRACE(e.path().string());
    ModelConfig m = load_model_config(e.path().string());
    EXPECT_FALSE(m.name.empty());
    EXPECT_FALSE(m.source.empty());
    ++n;
  }
  EXPECT_GE(n, 7);
}

TEST(ModelConfig, V4ProCarriesTheSpecShapes) {
  ModelConfig m = load_model_config(std::string(TREX_SOURCE_DIR) + "/configs/model/deepseek-v4-pro.toml");
  EXPECT_EQ(m.attention.kind, AttentionKind::kV4);
  EXPECT_EQ(m.attention.compress_ratios.size(), 61u);
  int hca = 0, csa = 0;
  for (int r : m.attention.compress_ratios) (r == 128 ? hca : csa)++;
  EXPECT_EQ(hca, 31);
  EXPECT_EQ(csa, 30);
  EXPECT_EQ(m.compress_ratio(0), 128);
  EXPECT_EQ(m.compress_ratio(2), 4);
  EXPECT_EQ(m.compress_ratio(60), 4);
  EXPECT_EQ(m.ffn.hash_layers, 3);
  EXPECT_EQ(m.mhc.streams, 4);
  EXPECT_EQ(m.mhc.sinkhorn_iters, 20);
  EXPECT_DOUBLE_EQ(m.ffn.swiglu_limit, 10);
  EXPECT_DOUBLE_EQ(m.attention.yarn_factor, 16);
  EXPECT_EQ(m.mtp_depth, 1);
  EXPECT_DOUBLE_EQ(m.indexer.loss_weight, 1.0);
  EXPECT_DOUBLE_EQ(m.ffn.bias_update_rate, 0.0);  // post-training a release keeps its bias
  EXPECT_EQ(m.attention.window, 128);
  EXPECT_EQ(m.attention.o_groups, 16);
  EXPECT_EQ(m.indexer.top_k, 1024);
  EXPECT_EQ(m.ffn.routed_experts, 384);
  EXPECT_DOUBLE_EQ(m.ffn.routed_scaling_factor, 2.5);
}

TEST(ModelConfig, MinimalV4Parses) {
  ModelConfig m = parse_model_config(kNano, "m.toml");
  EXPECT_TRUE(m.is_moe());
  EXPECT_TRUE(m.layer_is_moe(0));
}

TEST(ModelConfig, BadInputNamesFileLineAndField) {
  EXPECT_EQ(error_of(replace(kNano, "hidden = 64", "hidden = 0")), "m.toml:4: model.hidden: must be at least 1");
  EXPECT_EQ(error_of(replace(kNano, "compress_ratios = [4, 128]", "compress_ratios = [4]")),
            "m.toml:15: attention.compress_ratios: has 1 entries, expected one per layer (2)");
  EXPECT_EQ(error_of(replace(kNano, "[4, 128]", "[4, 64]")),
            "m.toml:15: attention.compress_ratios: entries must be 0, 4 or 128, got 64");
  EXPECT_EQ(error_of(replace(kNano, "o_groups = 2", "o_groups = 3")),
            "m.toml:13: attention.o_groups: must divide heads (4)");
  EXPECT_EQ(error_of(replace(kNano, "top_k = 2", "top_k = 5")),
            "m.toml:25: ffn.top_k: exceeds routed_experts (4)");
  EXPECT_EQ(error_of(replace(kNano, "rope_dims = 8", "rope_dim = 8")), "m.toml:10: attention.rope_dim: unknown field");
  EXPECT_EQ(error_of(replace(kNano, "kind = \"v4\"", "kind = \"rnn\"")),
            "m.toml:7: attention.kind: is \"rnn\", expected gqa, mla or v4");
  EXPECT_NE(error_of(replace(kNano, "[indexer]\nheads = 2\nhead_dim = 8\ntop_k = 4\n", "")).find("indexer"),
            std::string::npos);
  EXPECT_NE(error_of("[model]\nname = \"x\"\n").find("missing"), std::string::npos);
  EXPECT_NE(error_of("[model\n").find("m.toml:1:"), std::string::npos);
}

TEST(ModelConfig, MissingFileIsAnInputError) {
  EXPECT_THROW(load_model_config("/nonexistent/model.toml"), InputError);
}

}  // namespace
}  // namespace trex::model
