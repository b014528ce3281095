// The tensors of one block (a main layer "layers.3." or the MTP block "mtp.0."), resolved by
// their layout names against a flat array that follows the layout: parameters, their bf16-rounded
// working copy or gradients. The training forward and the one-token generator both call these, so
// a block's names are spelled once beside the layout (param_layout.cc), not per caller.
#pragma once

#include <string>

#include "trex/kernels/mhc.h"
#include "trex/model/attention.h"
#include "trex/model/moe.h"
#include "trex/model/transformer.h"

namespace trex::model {

// Attention tensors under prefix + "attn."; the compressor and indexer ones are null where the
// block has none (the layout holds them only for ratio > 0 and ratio 4).
template <class PT>
AttentionTensors<PT> attention_tensors(const ParamLayout& layout, PT base, const std::string& prefix) {
  const std::string a = prefix + "attn.";
  auto at = [&](const char* n) -> PT {
    const ParamInfo* p = layout.find(a + n);
    return p ? base + p->offset : nullptr;
  };
  AttentionTensors<PT> t;
  t.wq_a = at("wq_a");
  t.q_norm = at("q_norm");
  t.wq_b = at("wq_b");
  t.wkv = at("wkv");
  t.kv_norm = at("kv_norm");
  t.attn_sink = at("attn_sink");
  t.wo_a = at("wo_a");
  t.wo_b = at("wo_b");
  t.comp_wkv = at("compressor.wkv");
  t.comp_wgate = at("compressor.wgate");
  t.comp_ape = at("compressor.ape");
  t.comp_norm = at("compressor.norm");
  t.idx_wq_b = at("indexer.wq_b");
  t.idx_weights_proj = at("indexer.weights_proj");
  t.idx_comp_wkv = at("indexer.compressor.wkv");
  t.idx_comp_wgate = at("indexer.compressor.wgate");
  t.idx_comp_ape = at("indexer.compressor.ape");
  t.idx_comp_norm = at("indexer.compressor.norm");
  return t;
}

// MoE tensors under prefix + "ffn."; every one is required (InputError naming it otherwise).
template <class PT>
MoeTensors<PT> moe_tensors(const ModelConfig& config, const ParamLayout& layout, PT base,
                           const std::string& prefix) {
  const std::string f = prefix + "ffn.";
  MoeTensors<PT> t;
  t.gate = base + layout.offset_of(f + "gate.weight");
  for (int e = 0; e < config.ffn.routed_experts; ++e) {
    const std::string ex = f + "experts." + std::to_string(e) + ".";
    t.w1.push_back(base + layout.offset_of(ex + "w1"));
    t.w2.push_back(base + layout.offset_of(ex + "w2"));
    t.w3.push_back(base + layout.offset_of(ex + "w3"));
  }
  for (int j = 0; j < config.ffn.shared_experts; ++j) {
    const std::string sx =
        f + "shared_experts." + (config.ffn.shared_experts > 1 ? std::to_string(j) + "." : "");
    t.shared_w1.push_back(base + layout.offset_of(sx + "w1"));
    t.shared_w2.push_back(base + layout.offset_of(sx + "w2"));
    t.shared_w3.push_back(base + layout.offset_of(sx + "w3"));
  }
  return t;
}

// The mHC kernels' shape for `tokens` tokens of this config.
inline kernels::MhcShape mhc_shape(const ModelConfig& config, int64_t tokens) {
  kernels::MhcShape s;
  s.tokens = tokens;
  s.d = config.hidden;
  s.n = config.mhc.streams;
  s.iters = config.mhc.sinkhorn_iters;
  s.eps = float(config.mhc.eps);
  s.rms_eps = float(config.norm_eps);
  return s;
}

}  // namespace trex::model
