// Tiny V4 configs for the model tests: v4-nano's structure (mHC with 4 streams, ratios 0, 4 and
// 128, hash and score-routed MoE layers, shared expert) at a size where a finite-difference pass
// over the whole model takes milliseconds.
#pragma once

#include <string>

#include "trex/model/config.h"

namespace trex::model::test_util {

// layers: the compress ratio of each main layer, e.g. "0, 4, 128". mtp: MTP depth (0 or 1).
inline ModelConfig tiny_v4_config(const std::string& ratios = "0, 4, 128", int mtp = 0, int hash_layers = 1) {
  int layers = 1;
  for (char c : ratios) layers += c == ',';
  std::string text = R"([model]
name = "tiny-v4"
vocab = 64
hidden = 32
layers = )" + std::to_string(layers) + R"(
mtp_depth = )" + std::to_string(mtp) + R"(
mtp_loss_weight = 0.3
train_seq_len = 64
[attention]
kind = "v4"
heads = 4
kv_heads = 1
head_dim = 16
rope_dims = 8
q_lora_rank = 16
window = 8
o_groups = 2
o_lora_rank = 8
compress_ratios = [)" + ratios + R"(]
[indexer]
heads = 2
head_dim = 8
top_k = 3
[mhc]
streams = 4
sinkhorn_iters = 20
[ffn]
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 24
hash_layers = )" + std::to_string(hash_layers) + R"(
routed_scaling_factor = 1.5
score_function = "sqrtsoftplus"
hash_seed = 7
)";
  return parse_model_config(text, "tiny-v4");
}

// configs/model/v4-nano.toml shrunk to three layers with ratios 0, 4 and 128 (d 32, 4 heads of 16,
// window 8, indexer top-3): nano's own mHC, MoE and hash settings at test size. Callers shrink
// further what their test needs (vocabulary, experts, loss weights).
inline ModelConfig shrunk_nano_config() {
  ModelConfig c = load_model_config(std::string(TREX_SOURCE_DIR) + "/configs/model/v4-nano.toml");
  c.hidden = 32;
  c.layers = 3;
  c.train_seq_len = 64;
  AttentionConfig& a = c.attention;
  a.heads = 4;
  a.head_dim = 16;
  a.rope_dims = 8;
  a.q_lora_rank = 16;
  a.window = 8;
  a.o_groups = 2;
  a.o_lora_rank = 8;
  a.compress_ratios = {0, 4, 128};
  c.indexer.heads = 2;
  c.indexer.head_dim = 8;
  c.indexer.top_k = 3;
  return c;
}

}  // namespace trex::model::test_util
