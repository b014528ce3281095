// A DeepSeek-V4-style transformer that trains: parameters in one flat fp32 array (llm.c style),
// forward and backward over a packed batch, composed from the kernels (spec sections 3-11).
//
//   e = Embed(id);  X_i = e (n mHC streams)
//   per layer: y = hc_pre(X); F = Attention(RMSNorm(y)); X = hc_post(F, X)
//              y = hc_pre(X); F = MoE(RMSNorm(y), id); X = hc_post(F, X)
//   y = hc_head(X); logits = head RMSNorm(y); loss = cross-entropy (+ MTP, + indexer KL)
//
// The parameter layout (names, shapes, offsets) is fixed by the config; names follow the spec
// ("embed", "layers.3.attn.wq_a", "layers.3.ffn.experts.5.w1", "mtp.0.e_proj", "head", ...).
// Initialisation follows spec section 11 and is a pure function of (config, seed).
// Layout, init, routing table, MTP and precision details: docs/model-transformer.md.
// Non-parameter state: the balancing bias of each score-routed MoE layer (updated by the
// aux-loss-free rule, no gradient) and the frozen token -> expert table of each hash layer
// (built from hash_seed); both are saved with the weights.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trex/model/attention.h"
#include "trex/model/config.h"
#include "trex/model/expert_exchange.h"

namespace trex::model {

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;   // first element in the flat array
  int64_t numel = 0;
  bool decay = true;    // weight decay applies: matrices yes; norms, sinks, ape, mHC b/scale no
  bool indexer = false; // trained by the indexer's KL loss alone
};

struct ParamLayout {
  std::vector<ParamInfo> params;  // in flat order, contiguous, no gaps
  int64_t total = 0;
  std::unordered_map<std::string, size_t> index;  // name -> position in params
  // nullptr when absent.
  const ParamInfo* find(std::string_view name) const;
  // Element offset of a tensor; throws InputError naming it when absent.
  int64_t offset_of(std::string_view name) const;
};

// Throws InputError naming the field when `config` is not one the V4 transformer runs (kind v4,
// MoE in every layer, mHC streams >= 2, untied head, at most one MTP block).
void check_v4_config(const ModelConfig& config);

// The layout of a config: main layers, then MTP blocks (when mtp_depth > 0 and with_mtp).
ParamLayout build_param_layout(const ModelConfig& config, bool with_mtp = true);

// A packed batch of T tokens.
struct Batch {
  int64_t tokens = 0;            // T
  std::vector<int32_t> ids;      // [T] input token ids, 0 <= id < vocab
  std::vector<int32_t> targets;  // [T] the token to predict at each position; -1: no loss there
  std::vector<DocSpan> docs;     // cover [0, T) in order; attention never crosses them
                                 // (empty: the whole batch is one document)
};

struct LossStats {
  double ce_sum = 0;          // sum of the main cross-entropy over counted positions
  int64_t counted = 0;        // positions with a target
  double mtp_sum = 0;         // the same for the MTP head (0 when off)
  int64_t mtp_counted = 0;
  double indexer_loss = 0;    // sum over ratio-4 layers of lambda_I L_I
  double loss() const { return counted ? ce_sum / double(counted) : 0.0; }
};

// kFp32: everything fp32. kBf16 (spec section 2: bf16 weights and activations, fp32 master
// weights and accumulation): the forward and backward read the weight matrices rounded to bf16
// (a working copy refreshed from params() at every forward; the mHC tensors, norms, sinks, ape
// and the gate stay fp32), and the activations that cross an op boundary and are kept for the
// backward (the mHC streams, the normed layer inputs, the mixed inputs y and the layer outputs)
// are rounded to bf16 values. Storage stays fp32 (sgemm and the attention layer are fp32-only),
// so this reproduces bf16's numerics, not its memory. Logits, losses and gradients stay fp32.
enum class Precision { kFp32, kBf16 };

class Transformer {
 public:
  // Throws InputError (field named) for a config that is not a V4 config. with_mtp = false
  // trains without the MTP blocks even when the config has them.
  Transformer(const ModelConfig& config, uint64_t seed, bool with_mtp = true);
  ~Transformer();
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  const ModelConfig& config() const;
  void set_precision(Precision p);
  Precision precision() const;
  const ParamLayout& layout() const;
  bool mtp_enabled() const;

  // The flat parameter array the forward reads, and the gradient array of the same layout.
  float* params();
  const float* params() const;
  float* grads();
  // Zeroes the gradients and the step's expert load (step_expert_load()).
  void zero_grads();

  // Forward and backward. Adds into grads() the gradient of
  //   grad_scale * (ce_sum + mtp_loss_weight * mtp_sum) + indexer_loss
  // (grad_scale <= 0 means 1 / counted, a mean over the batch). Does not zero grads first.
  // Throws InputError for a malformed batch (ids out of range, docs not covering [0, T)).
  LossStats forward_backward(const Batch& batch, float grad_scale = 0);
  // Called by forward_backward each time the gradient of a flat range [lo, hi) is complete for
  // that call (nothing later in the pass adds to it), in the order the backward finishes them:
  // the main head (norm, head, hc_head) with the MTP block when there is one (the MTP head
  // shares "head"); then for each of layers.L-1 ... layers.0 three ranges: its FFN (gate and
  // experts, after the FFN's backward, before the attention's), its norms and mHC parameters,
  // its attention; the embedding.
  // The ranges of one call are disjoint and cover the layout; an optimizer can update them while
  // the rest of the backward runs (the swap optimizer's overlap). The hook may read grads() in
  // [lo, hi) and must not touch params(). Under expert parallelism the routed experts' gradients
  // are not in grads() (see set_expert_exchange). An empty function: none.
  using GradFinalHook = std::function<void(int64_t lo, int64_t hi)>;
  void set_grad_final_hook(GradFinalHook hook);

  // Forward only. logits (optional): [T, vocab] of the main head.
  LossStats forward(const Batch& batch, std::vector<float>* logits = nullptr);

  // Tokens routed to each expert by the last forward, per MoE layer ([layer][expert]).
  const std::vector<std::vector<int64_t>>& expert_load() const;
  // The same summed over the forward_backward calls since zero_grads() (the micro-batches of a
  // step, like the gradients); forward() does not count.
  const std::vector<std::vector<int64_t>>& step_expert_load() const;
  // b_e += u * sign(mean_load - load_e) for every score-routed layer, from step_expert_load()
  // (u = config ffn.bias_update_rate).
  void update_routing_bias();
  // The same rule from a given load per MoE layer ([layer][expert]; a parallel run passes the
  // load summed over its ranks so every rank moves the bias alike).
  void update_routing_bias(const std::vector<std::vector<int64_t>>& load);

  // Expert parallelism: every MoE layer runs its routed experts over `ex`'s group (nullptr: all
  // here); see MoeLayer::set_exchange. Then the routed experts' gradients do not reach grads():
  // MoE layer i's are in moe_source_grads(i), and zero_grads() zeroes them too.
  void set_expert_exchange(ExpertExchange* ex);
  int moe_layers() const;
  // The MoE layer's prefix ("layers.3.", "mtp.0."), its first local expert and count.
  const std::string& moe_prefix(int moe_layer) const;
  int first_local_expert(int moe_layer) const;
  int local_experts(int moe_layer) const;
  // [source peer][local expert][w1 | w2 | w3] (MoeLayer::source_grads).
  std::span<const float> moe_source_grads(int moe_layer) const;

  // The selection bias [E] of MoE layer i (the main layers, then the MTP block), which
  // update_routing_bias() moves; nullptr for a hash-routed layer.
  float* routing_bias(int moe_layer);

  // Every parameter (F32, by name) and the non-parameter state ("...gate.bias" F32,
  // "...gate.tid2eid" I32) in one safetensors file, written atomically, with metadata.
  void save(const std::string& path, const std::map<std::string, std::string>& metadata = {}) const;
  // Reads a file save() wrote; every name and shape must match. Throws InputError naming the
  // file and the tensor.
  void load(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trex::model
