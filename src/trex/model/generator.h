// Token-by-token inference of a trained Transformer with per-layer KV caches: prefill of a
// prompt, then greedy or temperature / top-p sampling until a stop token or a token budget.
//
// One step runs the whole model on one token at the next position of the sequence:
//   X_i = embed[id];  per layer: y = hc_pre(X); F = attn.decode(RMSNorm(y)); X = hc_post(F, X)
//                                y = hc_pre(X); F = MoE(RMSNorm(y), id);      X = hc_post(F, X)
//   y = hc_head(X);  logits = head RMSNorm(y)
// exactly the Transformer's forward for that position (one document; the MTP block is not
// used), so the logits of step t equal row t of Transformer::forward up to rounding. The
// Generator computes in fp32 whatever the model's Precision: in kBf16 mode the training forward
// also rounds weights and activations to bf16, so there the two agree to bf16 rounding.
//
// Parameters are read through the model's layout names from its params() array on every step
// (the Generator keeps a reference: the model must outlive it, and may be trained or loaded in
// between). The MoE routing state starts as a fresh Transformer's (zero selection bias, hash
// tables from config.ffn.hash_seed); load_routing_state() reads a checkpoint's.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "trex/model/sampling.h"
#include "trex/model/transformer.h"

namespace trex::model {

struct SamplingOptions {
  double temperature = 0;        // <= 0: greedy (argmax, ties to the lower id)
  double top_p = 1;              // nucleus: the smallest set of top tokens with mass >= top_p
  uint64_t seed = 0;             // seeds the sampler (same seed, same model: same tokens)
  int64_t max_tokens = 256;      // new tokens at most
  std::vector<int32_t> stop_ids; // generation ends after producing one of these (not returned)
  int64_t vocab_limit = 0;       // > 0: only ids below it are drawn (a tokenizer smaller than
                                 // the model's vocabulary has no piece for the rest)
  // Ids never drawn (logit -inf, sample_token): the number slots a chat prompt has no number
  // for (train::unfillable_slot_ids), so a completion never writes one.
  std::vector<int32_t> excluded_ids;
};

class Generator {
 public:
  explicit Generator(const Transformer& model);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // The selection bias ("layers.N.ffn.gate.bias") and hash tables ("layers.N.ffn.gate.tid2eid")
  // from a safetensors file Transformer::save wrote; tensors it lacks keep their values.
  // Throws InputError naming the file for a tensor of the wrong type or shape.
  void load_routing_state(const std::string& safetensors_path);

  // Starts a new sequence (clears every cache).
  void reset();
  // Tokens fed since reset().
  int64_t position() const;
  // Feeds one token at the next position; returns the logits [V] for the token after it
  // (valid until the next call). Throws InputError for an id outside [0, vocab).
  std::span<const float> step(int32_t id);
  // Feeds every token of `ids` in order; returns the logits after the last one. From position 0
  // the tokens run as one batch (GEMMs over the whole prompt; same result up to rounding).
  // Throws InputError for an id outside [0, vocab).
  std::span<const float> prefill(std::span<const int32_t> ids);

  // reset(), prefill(prompt), then draw up to max_tokens tokens, feeding each back; stops after
  // a stop id. Returns the drawn ids, the stop id excluded. REQUIRES: prompt not empty.
  std::vector<int32_t> generate(std::span<const int32_t> prompt, const SamplingOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trex::model
