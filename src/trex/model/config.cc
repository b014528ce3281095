#include "trex/model/config.h"

#include <sstream>

#include "trex/model/toml_fields.h"
#include "trex/util/error.h"

namespace trex::model {

const char* to_string(AttentionKind k) {
  switch (k) {
    case AttentionKind::kGqa: return "gqa";
    case AttentionKind::kMla: return "mla";
    case AttentionKind::kV4: return "v4";
  }
  return "?";
}

int ModelConfig::compress_ratio(int i) const {
  if (attention.kind != AttentionKind::kV4 || i < 0 || i >= int(attention.compress_ratios.size()))
    return 0;
  return attention.compress_ratios[size_t(i)];
}

namespace {

constexpr long kMaxDim = 1L << 24;

void read_attention(TomlFields& f, ModelConfig& m) {
  AttentionConfig& a = m.attention;
  std::string kind = f.choice("kind", {"gqa", "mla", "v4"});
  a.kind = kind == "gqa" ? AttentionKind::kGqa : kind == "mla" ? AttentionKind::kMla : AttentionKind::kV4;
  a.heads = int(f.integer("heads", 1));
  a.rope_dims = int(f.integer_or("rope_dims", 0, 0));
  a.rope_theta = f.number_or("rope_theta", 10000, 1, 1e12);
  a.qkv_bias = f.boolean_or("qkv_bias", false);
  a.q_lora_rank = int(f.integer_or("q_lora_rank", 0, 0));
  switch (a.kind) {
    case AttentionKind::kGqa:
      a.kv_heads = int(f.integer_or("kv_heads", a.heads, 1));
      a.head_dim = int(f.integer_or("head_dim", m.hidden / a.heads, 1));
      if (a.heads % a.kv_heads != 0) f.fail("kv_heads", "must divide heads (" + std::to_string(a.heads) + ")");
      break;
    case AttentionKind::kMla:
      a.kv_heads = a.heads;
      a.kv_lora_rank = int(f.integer("kv_lora_rank", 1));
      a.qk_nope_head_dim = int(f.integer("qk_nope_head_dim", 1));
      a.qk_rope_head_dim = int(f.integer("qk_rope_head_dim", 1));
      a.v_head_dim = int(f.integer("v_head_dim", 1));
      a.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
      a.rope_dims = a.qk_rope_head_dim;
      break;
    case AttentionKind::kV4: {
      a.kv_heads = int(f.integer_or("kv_heads", 1, 1));
      if (a.kv_heads != 1) f.fail("kv_heads", "must be 1 (one shared K=V head)");
      a.head_dim = int(f.integer("head_dim", 1));
      if (a.q_lora_rank < 1) f.fail("q_lora_rank", "missing (V4 attention has a low-rank query)");
      a.window = int(f.integer("window", 1));
      a.o_groups = int(f.integer("o_groups", 1));
      a.o_lora_rank = int(f.integer("o_lora_rank", 1));
      if (a.heads % a.o_groups != 0) f.fail("o_groups", "must divide heads (" + std::to_string(a.heads) + ")");
      a.compress_rope_theta = f.number_or("compress_rope_theta", a.rope_theta, 1, 1e12);
      a.yarn_factor = f.number_or("yarn_factor", 1, 1, 1e6);
      a.yarn_original_length = int(f.integer_or("yarn_original_length", 0, 0));
      a.yarn_beta_fast = f.number_or("yarn_beta_fast", 32, 0, 1e6);
      a.yarn_beta_slow = f.number_or("yarn_beta_slow", 1, 0, 1e6);
      std::vector<long> r = f.integers("compress_ratios", 0);
      if (long(r.size()) != m.layers)
        f.fail("compress_ratios", "has " + std::to_string(r.size()) + " entries, expected one per layer (" +
                                      std::to_string(m.layers) + ")");
      for (long v : r) {
        if (v != 0 && v != 4 && v != 128) f.fail("compress_ratios", "entries must be 0, 4 or 128, got " + std::to_string(v));
        a.compress_ratios.push_back(int(v));
      }
      break;
    }
  }
  if (a.rope_dims > a.head_dim) f.fail("rope_dims", "exceeds head_dim (" + std::to_string(a.head_dim) + ")");
  if (a.rope_dims % 2 != 0) f.fail("rope_dims", "must be even (rotary pairs)");
  if (a.head_dim > kMaxDim) f.fail("head_dim", "is implausibly large");
  f.finish();
}

void read_ffn(TomlFields& f, ModelConfig& m) {
  FfnConfig& ffn = m.ffn;
  ffn.activation = f.choice_or("activation", "swiglu", {"swiglu", "gelu"}) == "gelu" ? Activation::kGelu : Activation::kSwiglu;
  ffn.bias = f.boolean_or("bias", false);
  ffn.swiglu_limit = f.number_or("swiglu_limit", 0, 0, 1e9);
  ffn.routed_experts = int(f.integer_or("routed_experts", 0, 0));
  if (ffn.routed_experts == 0) {
    ffn.hidden = int(f.integer("hidden", 1));
    f.finish();
    return;
  }
  ffn.shared_experts = int(f.integer_or("shared_experts", 0, 0));
  ffn.top_k = int(f.integer("top_k", 1));
  ffn.expert_hidden = int(f.integer("expert_hidden", 1));
  ffn.dense_layers = int(f.integer_or("dense_layers", 0, 0));
  ffn.hidden = int(f.integer_or("hidden", 0, 0));
  ffn.hash_layers = int(f.integer_or("hash_layers", 0, 0));
  ffn.routed_scaling_factor = f.number_or("routed_scaling_factor", 1, 0, 1e6);
  ffn.score_function = f.choice_or("score_function", "softmax", {"softmax", "sigmoid", "sqrtsoftplus"});
  ffn.bias_update_rate = f.number_or("bias_update_rate", 1e-3, 0, 1);
  ffn.hash_seed = f.integer_or("hash_seed", 0, 0);
  if (ffn.top_k > ffn.routed_experts)
    f.fail("top_k", "exceeds routed_experts (" + std::to_string(ffn.routed_experts) + ")");
  if (ffn.dense_layers >= m.layers) f.fail("dense_layers", "leaves no MoE layer");
  if (ffn.dense_layers > 0 && ffn.hidden < 1) f.fail("hidden", "missing (the width of the dense layers)");
  if (ffn.hash_layers > m.layers - ffn.dense_layers) f.fail("hash_layers", "exceeds the MoE layers");
  f.finish();
}

ModelConfig read(const toml::table& root, const std::string& file, bool other_tables = false) {
  TomlFields top(file, root, "");
  ModelConfig m;
  m.file = file;
  const toml::table* mt = top.table("model");
  if (mt == nullptr) throw InputError(file, 0, "model: missing table [model]");
  {
    TomlFields f(file, *mt, "model");
    m.name = f.text("name");
    m.source = f.text_or("source", "");
    m.vocab = int(f.integer("vocab", 1));
    m.hidden = int(f.integer("hidden", 1));
    m.layers = int(f.integer("layers", 1));
    m.mtp_depth = int(f.integer_or("mtp_depth", 0, 0));
    m.tie_embeddings = f.boolean_or("tie_embeddings", false);
    m.norm = f.choice_or("norm", "rmsnorm", {"rmsnorm", "layernorm"});
    m.norm_eps = f.number_or("norm_eps", 1e-6, 0, 1);
    m.position_embedding = f.choice_or("position_embedding", "rope", {"rope", "learned"});
    m.max_seq_len = int(f.integer_or("max_seq_len", 0, 0));
    m.train_seq_len = int(f.integer_or("train_seq_len", m.max_seq_len > 0 ? m.max_seq_len : 4096, 1));
    m.mtp_loss_weight = f.number_or("mtp_loss_weight", m.mtp_depth > 0 ? 0.1 : 0.0, 0, 100);
    m.init_std = f.number_or("init_std", 0.02, 0, 10);
    if (m.position_embedding == "learned" && m.max_seq_len < 1)
      f.fail("max_seq_len", "missing (a learned position table needs its size)");
    if (m.vocab > kMaxDim * 4 || m.hidden > kMaxDim || m.layers > 100000) f.fail("hidden", "implausibly large model");
    f.finish();
  }
  const toml::table* at = top.table("attention");
  if (at == nullptr) throw InputError(file, 0, "attention: missing table [attention]");
  {
    TomlFields f(file, *at, "attention");
    read_attention(f, m);
  }
  const toml::table* ft = top.table("ffn");
  if (ft == nullptr) throw InputError(file, 0, "ffn: missing table [ffn]");
  {
    TomlFields f(file, *ft, "ffn");
    read_ffn(f, m);
  }
  if (const toml::table* it = top.table("indexer")) {
    TomlFields f(file, *it, "indexer");
    m.indexer.heads = int(f.integer("heads", 1));
    m.indexer.head_dim = int(f.integer("head_dim", 1));
    m.indexer.top_k = int(f.integer("top_k", 1));
    m.indexer.loss_weight = f.number_or("loss_weight", 1.0, 0, 1e6);
    f.finish();
  }
  if (const toml::table* ht = top.table("mhc")) {
    TomlFields f(file, *ht, "mhc");
    m.mhc.streams = int(f.integer("streams", 1));
    m.mhc.sinkhorn_iters = int(f.integer_or("sinkhorn_iters", 20, 0));
    m.mhc.eps = f.number_or("eps", 1e-6, 0, 1);
    f.finish();
  }
  if (!other_tables) top.finish();
  bool has_csa = false;
  for (int r : m.attention.compress_ratios) has_csa |= r == 4;
  if (has_csa && m.indexer.heads == 0)
    throw InputError(file, 0, "indexer: missing table [indexer] (ratio-4 layers need the lightning indexer)");
  if (m.attention.kind == AttentionKind::kGqa && m.attention.heads * m.attention.head_dim != m.hidden &&
      m.attention.q_lora_rank == 0 && !at->contains("head_dim"))
    throw InputError(file, 0, "attention.heads: must divide model.hidden or give head_dim");
  return m;
}

}  // namespace

ModelConfig load_model_config(const std::string& path) {
  toml::table t = TomlFields::parse_file(path);
  return read(t, path);
}

ModelConfig load_model_tables(const std::string& path) {
  toml::table t = TomlFields::parse_file(path);
  return read(t, path, true);
}

ModelConfig parse_model_config(const std::string& text, const std::string& name) {
  toml::table t;
  try {
    t = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw InputError(name, long(e.source().begin.line), std::string(e.description()));
  }
  return read(t, name);
}

}  // namespace trex::model
