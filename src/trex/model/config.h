// Model configurations: the architecture of a transformer as plain data, read from a TOML
// file under configs/model/ (format in docs/model.md).
//
// One struct describes three families, because the planner and the accounting treat them
// with one set of formulas:
//   - dense GPT/Llama-style models (attention "gqa": multi-head or grouped-query attention),
//   - DeepSeek-V3-style MoE models (attention "mla": multi-head latent attention),
//   - DeepSeek-V4-style models (attention "v4": low-rank query, one shared K=V head, sliding
//     window, compressed sparse attention with ratios 4 and 128, the lightning indexer,
//     grouped low-rank output projection; mHC residual streams; hash-routed first layers).
// The V4 fields follow spec/deepseek-v4.md section 1 and carry the names used there.
//
// load_model_config() checks the whole file (required fields present, sizes positive, shapes
// consistent: head counts divisible by groups, one compress ratio per layer, top-k <= experts,
// and so on) and refuses unknown keys. Errors are InputErrors of one line naming the file,
// the line and the field.
#pragma once

#include <string>
#include <vector>

namespace trex::model {

enum class AttentionKind { kGqa, kMla, kV4 };
enum class Activation { kGelu, kSwiglu };

const char* to_string(AttentionKind k);

struct AttentionConfig {
  AttentionKind kind = AttentionKind::kGqa;
  int heads = 0;           // H, query heads
  int kv_heads = 0;        // GQA: key/value heads (= heads for MHA); V4: 1 (K = V, shared)
  int head_dim = 0;        // hd (GQA, V4)
  int rope_dims = 0;       // rd: rotary dimensions (the last rd of a head in V4)
  bool qkv_bias = false;   // GPT-style projection and output biases
  // Low-rank query (V4, MLA): wq_a [qlr, d] then wq_b [H*hd, qlr]; 0 = full-rank query.
  int q_lora_rank = 0;
  // MLA (DeepSeek-V2/V3) only.
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // V4 only.
  int window = 0;                    // sliding window (win)
  std::vector<int> compress_ratios;  // one per main layer: 0 window only, 4 CSA, 128 HCA
  int o_groups = 0;                  // G: output projection groups
  int o_lora_rank = 0;               // olr: rank of each group's projection
  double rope_theta = 10000;
  double compress_rope_theta = 10000;
  double yarn_factor = 1;            // 1 = no YaRN scaling
  int yarn_original_length = 0;
  double yarn_beta_fast = 32;
  double yarn_beta_slow = 1;
};

// The lightning indexer of ratio-4 layers (V4).
struct IndexerConfig {
  int heads = 0;     // IH
  int head_dim = 0;  // Ihd
  int top_k = 0;     // k
  double loss_weight = 1.0;  // lambda_I of the indexer's KL loss (spec section 8; [uncertain] for V4)
};

// Manifold-constrained hyper-connections; streams = 1 means a plain residual stream.
struct MhcConfig {
  int streams = 1;          // n
  int sinkhorn_iters = 0;   // T
  double eps = 1e-6;
};

// Feed-forward blocks. A model with routed_experts = 0 is dense.
struct FfnConfig {
  Activation activation = Activation::kSwiglu;
  int hidden = 0;            // width of a dense FFN layer
  bool bias = false;         // GPT-style FFN biases
  double swiglu_limit = 0;   // 0 = no clamp (limited SwiGLU, V4: 10)
  // MoE.
  int routed_experts = 0;    // E
  int shared_experts = 0;
  int top_k = 0;             // K
  int expert_hidden = 0;     // f, routed and shared experts alike
  int dense_layers = 0;      // the first layers use a dense FFN of width `hidden` (V3: 3)
  int hash_layers = 0;       // the first layers route by a frozen token->expert table (V4)
  double routed_scaling_factor = 1;
  std::string score_function = "softmax";  // softmax | sigmoid | sqrtsoftplus
  double bias_update_rate = 1e-3;  // u of the aux-loss-free balancing bias (0 when post-training a release)
  long hash_seed = 0;              // seeds the frozen token -> expert table of the hash layers
};

struct ModelConfig {
  std::string name;
  std::string file;            // where it was read from
  std::string source;          // where the shapes come from (paper, config.json)
  int vocab = 0;               // V
  int hidden = 0;              // d
  int layers = 0;              // L, main layers (MTP not included)
  int mtp_depth = 0;           // multi-token-prediction blocks
  bool tie_embeddings = false;
  std::string norm = "rmsnorm";            // rmsnorm | layernorm
  double norm_eps = 1e-6;
  std::string position_embedding = "rope"; // rope | learned
  int max_seq_len = 0;                     // learned position table size; also a default seq
  int train_seq_len = 0;                   // the sequence length the config is meant for
  double mtp_loss_weight = 0;
  double init_std = 0.02;
  AttentionConfig attention;
  IndexerConfig indexer;
  MhcConfig mhc;
  FfnConfig ffn;

  bool is_moe() const { return ffn.routed_experts > 0; }
  // True when main layer `i` (0-based) has a routed-expert FFN.
  bool layer_is_moe(int i) const { return is_moe() && i >= ffn.dense_layers; }
  // V4 compress ratio of main layer i (0 for other families).
  int compress_ratio(int i) const;
};

// Reads and checks a model config. Throws InputError.
ModelConfig load_model_config(const std::string& path);
// Reads the model tables ([model], [attention], [ffn], [indexer], [mhc]) of a file that also
// holds other tables (a validation run describes its model inline); other tables are left to
// their own reader.
ModelConfig load_model_tables(const std::string& path);
// The same from text; `name` stands for the file in errors.
ModelConfig parse_model_config(const std::string& text, const std::string& name);

}  // namespace trex::model
