// A checkpoint directory as `trex train` leaves one, written by tests: a small V4 model's
// weights (every layer kind: ratios 0, 4, 128; a hash layer), a tokenizer trained here on a few
// OR-flavoured lines, and state.json in SFT mode naming a train config that is gone (as after
// moving a run) and recording the model config as trex train does (train/model_record.h); with
// record = false, as written before checkpoints recorded it, so loaders need the model TOML
// written beside it.
//   dir/model.toml, dir/ckpt/{model.safetensors, tokenizer.model, state.json}
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trex/model/config.h"
#include "trex/model/transformer.h"
#include "trex/train/model_record.h"
#include "trex/train/number_slots.h"
#include "trex/train/tokenizer.h"

namespace trex::test_util {

// v4-nano's structure at small sizes (every layer kind: ratios 0, 4, 128; a hash layer).
inline const char* kTinyCheckpointModelToml = R"(
[model]
name = "v4-gen-test"
vocab = 512
hidden = 32
layers = 3
mtp_depth = 0
norm = "rmsnorm"
norm_eps = 1e-6
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
rope_theta = 10000
compress_rope_theta = 10000
compress_ratios = [0, 4, 128]
[indexer]
heads = 2
head_dim = 8
top_k = 3
[mhc]
streams = 4
sinkhorn_iters = 20
eps = 1e-6
[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 24
hash_layers = 1
routed_scaling_factor = 1.0
score_function = "sqrtsoftplus"
)";

// number_slots > 0: its tokenizer has that many number slots (train/number_slots.h).
// slot_logit_scale > 0 (with number_slots): the LM head's rows of the slots are forced large, so
// at every position some slot's logit is far above every other token's: slot 2j+1's row is
// +scale on hidden dimension j, slot 2j+2's -scale on it (the head's input is RMS-normalised, so
// of each such pair one is >= 0, and the largest |x_j| is about 1 or more). Which slot wins
// varies with the position, most often one past a short prompt's numbers.
inline void write_tiny_checkpoint(const std::filesystem::path& dir, bool record = true, int number_slots = 0,
                                  float slot_logit_scale = 0) {
  namespace fs = std::filesystem;
  fs::create_directories(dir / "ckpt");
  std::ofstream(dir / "model.toml") << kTinyCheckpointModelToml;
  model::ModelConfig c = model::load_model_config((dir / "model.toml").string());
  model::Transformer m(c, 3, false);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("minimize cost subject to capacity " + std::to_string(i) +
                    " of the plant and demand of the market\n");
  train::TokenizerOptions to;
  to.vocab = 400;
  to.number_slots = number_slots;
  train::Tokenizer tok = train::Tokenizer::train(texts, to);
  tok.save((dir / "ckpt" / "tokenizer.model").string());
  if (slot_logit_scale > 0) {
    float* head = m.params() + m.layout().offset_of("head");  // [vocab, hidden]
    for (int i = 1; i <= number_slots; ++i) {
      const int32_t id = tok.encode(train::slot_piece(i)).at(0);
      float* row = head + int64_t(id) * c.hidden;
      std::fill(row, row + c.hidden, 0.f);
      row[(i - 1) / 2 % c.hidden] = (i % 2 == 1 ? 1.f : -1.f) * slot_logit_scale;
    }
  }
  m.save((dir / "ckpt" / "model.safetensors").string());
  nlohmann::json state = {{"format", "trex.train.checkpoint"}, {"version", 1}, {"step", 1}, {"mode", "sft"},
                          {"config", "/nonexistent/train.toml"}};
  if (record) state["model_config"] = train::model_record(c);
  std::ofstream(dir / "ckpt" / "state.json") << state.dump(2);
}

}  // namespace trex::test_util
