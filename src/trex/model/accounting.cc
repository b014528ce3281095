#include "trex/model/accounting.h"

#include <algorithm>

#include "trex/util/error.h"

namespace trex::model {

double LayerParams::total() const {
  return attention_matmul + compressor_matmul + indexer_matmul + attention_other + router + routed_experts +
         shared_experts + dense_ffn + norms + mhc;
}

double LayerParams::active_matmul(const ModelConfig& m) const {
  double ffn = dense_ffn;
  if (routed_experts > 0) ffn = double(m.ffn.top_k) * expert_one + shared_experts + double(m.ffn.routed_experts) * m.hidden;
  return attention_matmul + compressor_matmul + indexer_matmul + ffn + mhc_matmul;
}

namespace {

double norm_params(const ModelConfig& m) { return m.norm == "layernorm" ? 2.0 * m.hidden : double(m.hidden); }

// Parameters of the FFN matrices of one dense layer of width f.
double dense_ffn_params(const ModelConfig& m, double f) {
  double d = m.hidden;
  double p = (m.ffn.activation == Activation::kSwiglu ? 3.0 : 2.0) * d * f;
  if (m.ffn.bias) p += (m.ffn.activation == Activation::kSwiglu ? 2.0 : 1.0) * f + d;
  return p;
}

void attention_params(const ModelConfig& m, int ratio, LayerParams& p) {
  const AttentionConfig& a = m.attention;
  double d = m.hidden, H = a.heads, hd = a.head_dim, qlr = a.q_lora_rank;
  switch (a.kind) {
    case AttentionKind::kGqa:
      p.attention_matmul = d * H * hd + 2 * d * a.kv_heads * hd + H * hd * d;
      if (a.qkv_bias) p.attention_other = H * hd + 2.0 * a.kv_heads * hd + d;
      break;
    case AttentionKind::kMla: {
      double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      p.attention_matmul = qlr > 0 ? d * qlr + qlr * H * qk : d * H * qk;
      p.attention_matmul += d * (a.kv_lora_rank + a.qk_rope_head_dim) +
                            double(a.kv_lora_rank) * H * (a.qk_nope_head_dim + a.v_head_dim) + H * a.v_head_dim * d;
      p.attention_other = (qlr > 0 ? qlr : 0) + a.kv_lora_rank;
      break;
    }
    case AttentionKind::kV4: {
      double G = a.o_groups, olr = a.o_lora_rank;
      p.attention_matmul = qlr * d + H * hd * qlr + hd * d + G * olr * (H * hd / G) + d * G * olr;
      p.attention_other = qlr + hd + H;  // q_norm, kv_norm, sinks
      if (ratio > 0) {
        double c = ratio == 4 ? 2 : 1;
        p.compressor_matmul = 2 * c * hd * d;
        p.attention_other += ratio * c * hd + hd;  // ape, norm
      }
      if (ratio == 4) {
        double IH = m.indexer.heads, Ihd = m.indexer.head_dim;
        p.indexer_matmul = IH * Ihd * qlr + IH * d + 2 * (2 * Ihd * d);
        p.attention_other += 4 * 2 * Ihd + Ihd;
      }
      break;
    }
  }
}

}  // namespace

LayerParams layer_params(const ModelConfig& m, int layer, bool mtp_block) {
  LayerParams p;
  double d = m.hidden;
  int ratio = mtp_block ? 0 : m.compress_ratio(layer);
  attention_params(m, ratio, p);
  bool moe = m.is_moe() && (mtp_block || layer >= m.ffn.dense_layers);
  if (moe) {
    const FfnConfig& f = m.ffn;
    bool hash = !mtp_block && layer < f.dense_layers + f.hash_layers;
    p.router = double(f.routed_experts) * d + (hash ? 0 : f.routed_experts);  // score-routed: selection bias
    p.expert_one = 3.0 * f.expert_hidden * d;
    p.routed_experts = f.routed_experts * p.expert_one;
    p.shared_experts = f.shared_experts * p.expert_one;
  } else {
    p.dense_ffn = dense_ffn_params(m, m.ffn.hidden);
  }
  p.norms = 2 * norm_params(m);
  double n = m.mhc.streams;
  if (n > 1) {
    p.mhc_matmul = 2 * (n + 2) * n * n * d;
    p.mhc = p.mhc_matmul + 2 * ((n + 2) * n + 3);
  }
  return p;
}

ParamCounts count_parameters(const ModelConfig& m) {
  ParamCounts c;
  double d = m.hidden, V = m.vocab, n = m.mhc.streams;
  c.embedding = V * d + (m.position_embedding == "learned" ? double(m.max_seq_len) * d : 0);
  c.head = m.tie_embeddings ? 0 : V * d;
  c.final_norms = norm_params(m) + (n > 1 ? n * n * d + n + 1 : 0);
  double active = m.tie_embeddings ? V * d : c.head;
  active += c.final_norms;
  for (int i = 0; i < m.layers; ++i) {
    LayerParams p = layer_params(m, i);
    c.layers += p.total();
    c.routed_experts += p.routed_experts;
    active += p.total() - p.routed_experts + m.ffn.top_k * p.expert_one;
  }
  if (m.mtp_depth > 0) {
    LayerParams p = layer_params(m, 0, true);
    // A block plus e_proj and h_proj [d, d], enorm, hnorm and a final norm, its own mHC head;
    // the embedding and the output head are shared with the main model.
    double module = p.total() + 2 * d * d + 3 * norm_params(m) + (n > 1 ? n * n * d + n + 1 : 0);
    c.mtp = m.mtp_depth * module;
  }
  c.activated = active;
  return c;
}

// ---------------------------------------------------------------------------------------
// Key-set sizes, closed forms of sums over positions u = t + 1 = 1..s.

namespace {

// sum_{u=1..x} floor(u / r)
double sum_floor(long x, long r) {
  if (x <= 0) return 0;
  long q = x / r, rem = x - q * r;
  return double(r) * double(q) * double(q - 1) / 2 + double(q) * double(rem + 1);
}

// sum_{u=1..s} min(u, w)
double sum_window(long s, long w) {
  if (s <= w) return double(s) * double(s + 1) / 2;
  return double(w) * double(w + 1) / 2 + double(s - w) * double(w);
}

// sum_{u=1..s} min(k, floor(u / r))
double sum_topk(long s, long r, long k) {
  long cut = k * r - 1;  // floor(u/r) >= k from u = k r on
  if (s <= cut) return sum_floor(s, r);
  return sum_floor(cut, r) + double(k) * double(s - cut);
}

}  // namespace

double mean_visible_entries(int ratio, long seq) {
  if (ratio <= 0 || seq <= 0) return 0;
  return sum_floor(seq, ratio) / double(seq);
}

double mean_attended_keys(const ModelConfig& m, int layer, long seq) {
  if (seq <= 0) return 0;
  const AttentionConfig& a = m.attention;
  if (a.kind != AttentionKind::kV4) return double(seq + 1) / 2;
  int ratio = layer < 0 ? 0 : m.compress_ratio(layer);
  double keys = sum_window(seq, a.window);
  if (ratio == 128) keys += sum_floor(seq, 128);
  if (ratio == 4) keys += sum_topk(seq, 4, m.indexer.top_k);
  return keys / double(seq);
}

namespace {

// Forward FLOPs of one block per token; `layer` < 0 is the MTP block.
void block_forward(const ModelConfig& m, int layer, long seq, ForwardFlops& f) {
  const AttentionConfig& a = m.attention;
  LayerParams p = layer_params(m, layer < 0 ? 0 : layer, layer < 0);
  int ratio = layer < 0 ? 0 : m.compress_ratio(layer);
  double d = m.hidden, n = m.mhc.streams;
  f.linear += 2 * (p.active_matmul(m) - p.mhc_matmul);
  if (ratio > 0) f.linear += 2 * (ratio == 4 ? 2 : 1) * a.head_dim;                  // pooling
  if (ratio == 4) f.linear += 2 * 2 * m.indexer.head_dim;                           // indexer pooling
  double keys = mean_attended_keys(m, layer, seq);
  if (a.kind == AttentionKind::kMla)
    f.core_attention += 2.0 * a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) * keys;
  else
    f.core_attention += 4.0 * a.heads * a.head_dim * keys;
  if (ratio == 4)
    f.indexer += 2.0 * m.indexer.heads * (m.indexer.head_dim + 1) * mean_visible_entries(4, seq);
  if (n > 1) f.mhc += 2 * (2 * (n + 2) * n * n * d + 2 * n * d + 2 * n * (n + 1) * d);
}

// Attention FLOPs of one layer per token when every query attends `keys` keys densely.
double dense_attention(const ModelConfig& m, double keys) {
  const AttentionConfig& a = m.attention;
  if (a.kind == AttentionKind::kMla)
    return 2.0 * a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) * keys;
  return 4.0 * a.heads * a.head_dim * keys;
}

}  // namespace

ForwardFlops forward_flops(const ModelConfig& m, long seq, bool include_mtp) {
  ForwardFlops f;
  double d = m.hidden, n = m.mhc.streams;
  for (int i = 0; i < m.layers; ++i) block_forward(m, i, seq, f);
  f.lm_head = 2.0 * m.vocab * d;
  if (n > 1) f.mhc += 2 * n * n * d + 2 * n * d;  // mHC head
  if (include_mtp) {
    for (int k = 0; k < m.mtp_depth; ++k) {
      block_forward(m, -1, seq, f);
      f.linear += 2 * 2 * d * d;  // e_proj, h_proj
      f.lm_head += 2.0 * m.vocab * d;
      if (n > 1) f.mhc += 2 * n * n * d + 2 * n * d;
    }
  }
  return f;
}

const std::vector<FlopConvention>& all_conventions() {
  static const std::vector<FlopConvention> all = {FlopConvention::kTrex, FlopConvention::kSixN,
                                                  FlopConvention::kMegatron, FlopConvention::kDenseAttention,
                                                  FlopConvention::kMegatronHfu};
  return all;
}

const char* to_string(FlopConvention c) {
  switch (c) {
    case FlopConvention::kTrex: return "trex";
    case FlopConvention::kSixN: return "6n";
    case FlopConvention::kMegatron: return "megatron";
    case FlopConvention::kDenseAttention: return "dense-attn";
    case FlopConvention::kMegatronHfu: return "megatron-hfu";
  }
  return "?";
}

const char* describe(FlopConvention c) {
  switch (c) {
    case FlopConvention::kTrex: return "3 x forward contractions over the actual (causal, sparse) key sets";
    case FlopConvention::kSixN: return "6 x activated parameters, no attention term";
    case FlopConvention::kMegatron: return "GEMMs 3x, dense causal attention (s/2 keys), no sparsity discount";
    case FlopConvention::kDenseAttention: return "GEMMs 3x, attention over all s keys (PaLM, torchtitan)";
    case FlopConvention::kMegatronHfu: return "full recomputation counted: layers 4x, attention over s keys, logits 3x";
  }
  return "?";
}

FlopConvention parse_convention(const std::string& name, const std::string& field) {
  for (FlopConvention c : all_conventions())
    if (name == to_string(c)) return c;
  throw InputError::field(field, "unknown FLOP convention \"" + name +
                                     "\", expected trex, 6n, megatron, dense-attn or megatron-hfu");
}

double training_flops_per_token(const ModelConfig& m, long seq, FlopConvention c, bool include_mtp) {
  ForwardFlops f = forward_flops(m, seq, include_mtp);
  int blocks = m.layers + (include_mtp ? m.mtp_depth : 0);
  switch (c) {
    case FlopConvention::kTrex:
      return 3 * f.total();
    case FlopConvention::kSixN: {
      ParamCounts p = count_parameters(m);
      double n = p.activated;
      if (include_mtp && m.mtp_depth > 0) {
        LayerParams b = layer_params(m, 0, true);
        n += m.mtp_depth * (b.active_matmul(m) + 2.0 * m.hidden * m.hidden + double(m.vocab) * m.hidden);
      }
      return 6 * n;
    }
    case FlopConvention::kMegatron:
      return 3 * (f.linear + f.mhc + f.lm_head) + 3 * blocks * dense_attention(m, double(seq) / 2);
    case FlopConvention::kDenseAttention:
      return 3 * (f.linear + f.mhc + f.lm_head) + 3 * blocks * dense_attention(m, double(seq));
    case FlopConvention::kMegatronHfu:
      return 4 * (f.linear + f.mhc) + 3 * f.lm_head + 4 * blocks * dense_attention(m, double(seq));
  }
  return 0;
}

}  // namespace trex::model
