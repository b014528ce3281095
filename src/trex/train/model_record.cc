#include "trex/train/model_record.h"

#include <cstdint>
#include <cstdio>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::train {

namespace {

// File-local names carry the file's name (a unity batch of the part shares one namespace).
std::string record_num(int v) { return std::to_string(v); }
std::string record_num(long v) { return std::to_string(v); }
// Round-trips every double exactly.
std::string record_num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string record_flag(bool v) { return v ? "true" : "false"; }

std::string record_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// FNV-1a, 64 bits: stable across builds (std::hash is not).
std::string record_hash(const std::vector<std::pair<std::string, std::string>>& fields) {
  uint64_t h = 1469598103934665603ull;
  auto eat = [&](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0u) * 1099511628211ull;  // a separator, so "ab","c" and "a","bc" differ
  };
  for (const auto& [k, v] : fields) eat(k), eat(v);
  char buf[40];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> model_fields(const model::ModelConfig& m) {
  const model::AttentionConfig& a = m.attention;
  const model::FfnConfig& f = m.ffn;
  return {
      {"model.vocab", record_num(m.vocab)},
      {"model.hidden", record_num(m.hidden)},
      {"model.layers", record_num(m.layers)},
      {"model.mtp_depth", record_num(m.mtp_depth)},
      {"model.tie_embeddings", record_flag(m.tie_embeddings)},
      {"model.norm", m.norm},
      {"model.norm_eps", record_num(m.norm_eps)},
      {"model.position_embedding", m.position_embedding},
      {"model.max_seq_len", record_num(m.max_seq_len)},
      {"model.train_seq_len", record_num(m.train_seq_len)},
      {"model.mtp_loss_weight", record_num(m.mtp_loss_weight)},
      {"model.init_std", record_num(m.init_std)},
      {"attention.kind", model::to_string(a.kind)},
      {"attention.heads", record_num(a.heads)},
      {"attention.kv_heads", record_num(a.kv_heads)},
      {"attention.head_dim", record_num(a.head_dim)},
      {"attention.rope_dims", record_num(a.rope_dims)},
      {"attention.qkv_bias", record_flag(a.qkv_bias)},
      {"attention.q_lora_rank", record_num(a.q_lora_rank)},
      {"attention.kv_lora_rank", record_num(a.kv_lora_rank)},
      {"attention.qk_nope_head_dim", record_num(a.qk_nope_head_dim)},
      {"attention.qk_rope_head_dim", record_num(a.qk_rope_head_dim)},
      {"attention.v_head_dim", record_num(a.v_head_dim)},
      {"attention.window", record_num(a.window)},
      {"attention.compress_ratios", record_list(a.compress_ratios)},
      {"attention.o_groups", record_num(a.o_groups)},
      {"attention.o_lora_rank", record_num(a.o_lora_rank)},
      {"attention.rope_theta", record_num(a.rope_theta)},
      {"attention.compress_rope_theta", record_num(a.compress_rope_theta)},
      {"attention.yarn_factor", record_num(a.yarn_factor)},
      {"attention.yarn_original_length", record_num(a.yarn_original_length)},
      {"attention.yarn_beta_fast", record_num(a.yarn_beta_fast)},
      {"attention.yarn_beta_slow", record_num(a.yarn_beta_slow)},
      {"indexer.heads", record_num(m.indexer.heads)},
      {"indexer.head_dim", record_num(m.indexer.head_dim)},
      {"indexer.top_k", record_num(m.indexer.top_k)},
      {"indexer.loss_weight", record_num(m.indexer.loss_weight)},
      {"mhc.streams", record_num(m.mhc.streams)},
      {"mhc.sinkhorn_iters", record_num(m.mhc.sinkhorn_iters)},
      {"mhc.eps", record_num(m.mhc.eps)},
      {"ffn.activation", f.activation == model::Activation::kGelu ? "gelu" : "swiglu"},
      {"ffn.hidden", record_num(f.hidden)},
      {"ffn.bias", record_flag(f.bias)},
      {"ffn.swiglu_limit", record_num(f.swiglu_limit)},
      {"ffn.routed_experts", record_num(f.routed_experts)},
      {"ffn.shared_experts", record_num(f.shared_experts)},
      {"ffn.top_k", record_num(f.top_k)},
      {"ffn.expert_hidden", record_num(f.expert_hidden)},
      {"ffn.dense_layers", record_num(f.dense_layers)},
      {"ffn.hash_layers", record_num(f.hash_layers)},
      {"ffn.routed_scaling_factor", record_num(f.routed_scaling_factor)},
      {"ffn.score_function", f.score_function},
      {"ffn.bias_update_rate", record_num(f.bias_update_rate)},
      {"ffn.hash_seed", record_num(f.hash_seed)},
  };
}

nlohmann::json model_record(const model::ModelConfig& m) { return model_record(m, read_file(m.file)); }

nlohmann::json model_record(const model::ModelConfig& m, const std::string& text) {
  const auto fields = model_fields(m);
  // The text is what a load parses back: it must still describe the model this run built.
  if (model_fields(model::parse_model_config(text, m.file)) != fields)
    throw InputError(m.file, 0, "changed since the run read it; the checkpoint could not record its model");
  nlohmann::json f = nlohmann::json::object();
  for (const auto& [k, v] : fields) f[k] = v;
  return {{"file", m.file}, {"text", text}, {"fields", f}, {"hash", record_hash(fields)}};
}

std::optional<model::ModelConfig> recorded_model(const nlohmann::json& state, const std::string& state_file) {
  if (!state.contains("model_config")) return std::nullopt;
  const nlohmann::json& r = state["model_config"];
  if (!r.is_object() || !r.contains("text") || !r["text"].is_string() || !r.contains("fields") ||
      !r["fields"].is_object())
    throw InputError(state_file, 0, "model_config: needs 'text' (a string) and 'fields' (an object)");
  model::ModelConfig m = model::parse_model_config(r["text"].get<std::string>(), state_file + ": model_config.text");
  // The recorded fields are the model the weights were trained as; the text must parse to them
  // (a field this build does not know is no error: checkpoints outlive parsers in both ways).
  for (const auto& [k, v] : model_fields(m)) {
    if (!r["fields"].contains(k)) continue;
    const nlohmann::json& rv = r["fields"][k];
    if (!rv.is_string() || rv.get<std::string>() != v)
      throw InputError(state_file, 0, "model_config: fields." + k + " = " + rv.dump() + " but its text gives " + v);
  }
  if (r.contains("file") && r["file"].is_string()) m.file = r["file"].get<std::string>();
  return m;
}

void check_same_model(const model::ModelConfig& recorded, const model::ModelConfig& given, const std::string& ckpt,
                      const std::string& given_label, const std::string& field) {
  const auto a = model_fields(recorded), b = model_fields(given);
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].second != b[i].second)
      throw InputError::field(field, ckpt + " was trained with " + a[i].first + " = " + a[i].second + ", " +
                                         given_label + " has " + b[i].second +
                                         " (its state.json records the model the weights were trained as)");
}

CheckpointModel checkpoint_model(const std::optional<model::ModelConfig>& recorded,
                                 const std::optional<model::ModelConfig>& given, const std::string& given_label,
                                 GivenModel how, const std::string& ckpt, const std::string& field) {
  if (!recorded) {
    if (!given) throw InputError::field(field, ckpt + " records no model config and none is given; name it with --model-config");
    return {*given, ckpt + " records no model config (written before checkpoints did); using " + given_label +
                        " as it is now, which cannot be checked against the weights"};
  }
  if (!given) return {*recorded, ""};
  if (how == GivenModel::kExplicit) {
    check_same_model(*recorded, *given, ckpt, given_label, field);
    return {*recorded, ""};
  }
  const auto a = model_fields(*recorded), b = model_fields(*given);
  size_t first = a.size(), differ = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].second != b[i].second) {
      if (first == a.size()) first = i;
      ++differ;
    }
  if (differ == 0) return {*recorded, ""};
  std::string more = differ > 1 ? " (and " + std::to_string(differ - 1) + " more field" + (differ > 2 ? "s" : "") + ")" : "";
  return {*recorded, ckpt + ": " + given_label + " now has " + a[first].first + " = " + b[first].second + more +
                         ", the weights were trained with " + a[first].second +
                         "; using the model config the checkpoint records"};
}

CheckpointModel checkpoint_model_by_path(const std::optional<model::ModelConfig>& recorded,
                                         const std::string& model_file, const std::string& given_label,
                                         const std::string& ckpt, const std::string& field) {
  std::optional<model::ModelConfig> given;
  try {
    given = model::load_model_config(model_file);
  } catch (const InputError& e) {
    if (!recorded) throw;
    return {*recorded, ckpt + ": cannot read " + given_label + " to check the model against it (" + e.what() +
                           "); using the model config the checkpoint records"};
  }
  return checkpoint_model(recorded, given, given_label, GivenModel::kByPath, ckpt, field);
}

bool training_only_field(const std::string& key) {
  return key == "model.init_std" || key == "model.train_seq_len" || key == "model.mtp_loss_weight" ||
         key == "indexer.loss_weight" || key == "ffn.bias_update_rate";
}

std::string check_init_model(const model::ModelConfig& recorded, const model::ModelConfig& run, const std::string& ckpt,
                             const std::string& run_label, const std::string& field) {
  const auto a = model_fields(recorded), b = model_fields(run);
  std::string note;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].second == b[i].second) continue;
    if (!training_only_field(a[i].first))
      throw InputError::field(field, ckpt + " was trained with " + a[i].first + " = " + a[i].second + ", " + run_label +
                                         " has " + b[i].second + " (its weights would compute something else)");
    note += (note.empty() ? "" : ", ") + a[i].first + " " + a[i].second + " -> " + b[i].second;
  }
  if (note.empty()) return "";
  return "run.init_from " + ckpt + ": this run changes training-only fields of its model: " + note;
}

}  // namespace trex::train
