// The flat parameter layout of a V4 transformer: names and shapes of spec section 1, in the
// order embed, layers.0 .. layers.{L-1}, final norm, head, hc_head, then mtp.0 (when on).
// Decay: matrices yes, except ape (a learned position bias); vectors (norms, sinks, mHC base
// and scale) no. The indexer flag marks the tensors trained by the indexer's KL loss alone.
#include <string>

#include "trex/model/transformer.h"
#include "trex/util/error.h"

namespace trex::model {

const ParamInfo* ParamLayout::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &params[it->second];
}

int64_t ParamLayout::offset_of(std::string_view name) const {
  const ParamInfo* p = find(name);
  if (!p) throw InputError::field(std::string(name), "the model's layout has no such parameter");
  return p->offset;
}

namespace {

class LayoutBuilder {
 public:
  explicit LayoutBuilder(ParamLayout& out) : out_(out) {}
  void add(const std::string& name, std::vector<int64_t> shape, bool indexer = false) {
    ParamInfo p;
    p.name = name;
    p.numel = 1;
    for (int64_t s : shape) p.numel *= s;
    p.shape = std::move(shape);
    p.offset = out_.total;
    p.decay = p.shape.size() == 2 && name.find(".ape") == std::string::npos;
    p.indexer = indexer;
    out_.total += p.numel;
    out_.index.emplace(p.name, out_.params.size());
    out_.params.push_back(std::move(p));
  }

 private:
  ParamLayout& out_;
};

// One block (a main layer or the MTP block) under `prefix` ("layers.3." or "mtp.0.").
void add_block(LayoutBuilder& b, const ModelConfig& c, const std::string& prefix, int ratio) {
  const AttentionConfig& a = c.attention;
  const int64_t d = c.hidden, H = a.heads, hd = a.head_dim, qlr = a.q_lora_rank, G = a.o_groups,
                olr = a.o_lora_rank;
  const std::string at = prefix + "attn.";
  b.add(at + "wq_a", {qlr, d});
  b.add(at + "q_norm", {qlr});
  b.add(at + "wq_b", {H * hd, qlr});
  b.add(at + "wkv", {hd, d});
  b.add(at + "kv_norm", {hd});
  b.add(at + "attn_sink", {H});
  b.add(at + "wo_a", {G * olr, H * hd / G});
  b.add(at + "wo_b", {d, G * olr});
  if (ratio > 0) {
    int64_t cc = ratio == 4 ? 2 : 1;
    b.add(at + "compressor.wkv", {cc * hd, d});
    b.add(at + "compressor.wgate", {cc * hd, d});
    b.add(at + "compressor.ape", {ratio, cc * hd});
    b.add(at + "compressor.norm", {hd});
  }
  if (ratio == 4) {
    const int64_t IH = c.indexer.heads, Ihd = c.indexer.head_dim;
    b.add(at + "indexer.wq_b", {IH * Ihd, qlr}, true);
    b.add(at + "indexer.weights_proj", {IH, d}, true);
    b.add(at + "indexer.compressor.wkv", {2 * Ihd, d}, true);
    b.add(at + "indexer.compressor.wgate", {2 * Ihd, d}, true);
    b.add(at + "indexer.compressor.ape", {4, 2 * Ihd}, true);
    b.add(at + "indexer.compressor.norm", {Ihd}, true);
  }
  const FfnConfig& f = c.ffn;
  const int64_t E = f.routed_experts, fh = f.expert_hidden;
  const std::string ff = prefix + "ffn.";
  b.add(ff + "gate.weight", {E, d});
  for (int64_t e = 0; e < E; ++e) {
    std::string ex = ff + "experts." + std::to_string(e) + ".";
    b.add(ex + "w1", {fh, d});
    b.add(ex + "w2", {d, fh});
    b.add(ex + "w3", {fh, d});
  }
  for (int j = 0; j < f.shared_experts; ++j) {
    std::string sx = ff + "shared_experts." + (f.shared_experts > 1 ? std::to_string(j) + "." : "");
    b.add(sx + "w1", {fh, d});
    b.add(sx + "w2", {d, fh});
    b.add(sx + "w3", {fh, d});
  }
  b.add(prefix + "attn_norm", {d});
  b.add(prefix + "ffn_norm", {d});
  const int64_t n = c.mhc.streams, R = (n + 2) * n;
  for (const char* site : {"hc_attn_", "hc_ffn_"}) {
    b.add(prefix + site + "fn", {R, n * d});
    b.add(prefix + site + "base", {R});
    b.add(prefix + site + "scale", {3});
  }
}

void add_head(LayoutBuilder& b, const ModelConfig& c, const std::string& prefix) {
  const int64_t d = c.hidden, n = c.mhc.streams;
  b.add(prefix + "hc_head_fn", {n, n * d});
  b.add(prefix + "hc_head_base", {n});
  b.add(prefix + "hc_head_scale", {1});
}

}  // namespace

void check_v4_config(const ModelConfig& c) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw InputError::field((c.file.empty() ? c.name : c.file) + ": " + field, why);
  };
  if (c.attention.kind != AttentionKind::kV4) fail("attention.kind", "the V4 transformer needs kind = \"v4\"");
  if (int(c.attention.compress_ratios.size()) != c.layers)
    fail("attention.compress_ratios", "one ratio per layer needed");
  if (!c.is_moe() || c.ffn.dense_layers != 0)
    fail("ffn", "the V4 transformer needs routed experts in every layer (dense_layers = 0)");
  if (c.mhc.streams < 2) fail("mhc.streams", "the V4 transformer needs at least 2 mHC streams");
  if (c.tie_embeddings) fail("model.tie_embeddings", "not supported by the V4 transformer");
  if (c.norm != "rmsnorm") fail("model.norm", "the V4 transformer uses rmsnorm");
  if (c.mtp_depth > 1) fail("model.mtp_depth", "at most 1 MTP block is implemented");
}

ParamLayout build_param_layout(const ModelConfig& c, bool with_mtp) {
  check_v4_config(c);
  ParamLayout layout;
  LayoutBuilder b(layout);
  b.add("embed", {c.vocab, c.hidden});
  for (int i = 0; i < c.layers; ++i)
    add_block(b, c, "layers." + std::to_string(i) + ".", c.compress_ratio(i));
  b.add("norm", {c.hidden});
  b.add("head", {c.vocab, c.hidden});
  add_head(b, c, "");
  if (with_mtp && c.mtp_depth > 0) {
    const int64_t d = c.hidden;
    b.add("mtp.0.e_proj", {d, d});
    b.add("mtp.0.h_proj", {d, d});
    b.add("mtp.0.enorm", {d});
    b.add("mtp.0.hnorm", {d});
    b.add("mtp.0.norm", {d});
    add_block(b, c, "mtp.0.", 0);
    add_head(b, c, "mtp.0.");
  }
  return layout;
}

}  // namespace trex::model
