// Decoding several sequences at once for continuous batching: a fixed number of slots, each a
// sequence with its own KV caches and position, and a step that advances any subset of them by
// one token together.
//
// One batched step runs the model over B rows, one per slot, the way Generator's step runs it
// over one: mHC pre/post and RMSNorm over all B rows; attention decode per slot, against that
// slot's own caches; the MoE layer and the LM head on multi-row matrix-vector products on packed
// weights (each weight read once for the rows of a block), since their GEMM paths pack whole
// weight panels per call and cost more than they save at a handful of rows. With a pool of
// several threads the rows are split into one group per thread (B rows over min(threads, B)
// lanes) for embedding, attention and the norms, and the lanes meet at a barrier around each MoE
// layer's experts and before the head, whose work they share by weights: each lane takes whole
// experts (moe_decode.h) and pieces of the head's panels over all rows, so each weight is read
// once per step. One row alone runs on one lane and splits the head's product over the pool.
// Every kernel computes each row as it would alone, so a slot's logits are bit for bit those of
// a lone Generator, whatever shares its step and however the work is split.
//
// A slot starts empty; prefill() feeds its prompt as one batch (the prompt's GEMMs over all
// its tokens), then step() feeds one token at a time. Slots are independent: resetting one
// leaves the others as they were.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "trex/model/transformer.h"

namespace trex::core {
class ThreadPool;  // core/thread_pool.h
}

namespace trex::model {

class BatchDecoder {
 public:
  // REQUIRES: slots >= 1. Keeps a reference: the model must outlive the decoder. The decode
  // weights are packed copies (packed_weights.h), each taken at its first use: the model's
  // weights must not change in place while the decoder lives, or it decodes with the old
  // weights of every matrix it has already used (packed copies are keyed by address).
  // The lanes of a step are the threads of `pool` (the default pool when null; the pool must
  // outlive the decoder); the kernels inside a lane use the default pool as always, and a row's
  // bits do not depend on either.
  BatchDecoder(const Transformer& model, int slots, core::ThreadPool* pool = nullptr);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  // The selection bias and hash tables of a checkpoint (see Generator::load_routing_state).
  void load_routing_state(const std::string& safetensors_path);

  int slots() const;
  int vocab() const;
  // Empties a slot (its caches and position).
  void reset(int slot);
  // Tokens fed to a slot since its reset.
  int64_t position(int slot) const;

  // Feeds `ids` to `slot` in order; returns the logits [V] after the last one (valid until the
  // next call). From position 0 the tokens run as one batch. Throws InputError for an id outside
  // [0, vocab) or an empty `ids`.
  std::span<const float> prefill(int slot, std::span<const int32_t> ids);

  // Feeds prompts[i] to slots[i] for every i, as prefill(slots[i], prompts[i]) would, one after
  // another (each slot's logits have those bits); returns the logits [n, V] after each prompt's
  // last token, row i for slots[i] (valid until the next call). With several lanes the prompts
  // that start their slot and have at most kLanePrefillMaxTokens tokens run on the lanes at
  // once, one prompt per lane at a time: small prompts are too short for their kernels to split
  // well over the threads (session 12 of issue 16). Longer ones run first, one at a time, their
  // kernels on the whole default pool: on a lane of the default pool a long prompt's kernels
  // would run serially, holding the call (and a server's every stream) meanwhile.
  // Throws InputError for a slot out of range or given twice, an empty prompt or an id outside
  // [0, vocab), before any slot changes. When a prefill fails the others may have run (reset
  // them all).
  std::span<const float> prefill_many(std::span<const int> slots,
                                      std::span<const std::span<const int32_t>> prompts);
  // The longest prompt prefill_many runs on a lane (a judgement, not a measurement: past it a
  // prompt's GEMMs have rows enough to split over the threads; bits do not depend on it).
  static constexpr int64_t kLanePrefillMaxTokens = 64;
  // Prompts of several tokens prefilled from position 0 since construction (one token is a
  // step, not counted): on a lane of prefill_many, or alone
  // (prefill(), or prefill_many's long prompts or its only one), kernels on the default pool.
  struct PrefillCounts {
    int64_t on_lanes = 0;
    int64_t alone = 0;
  };
  PrefillCounts prefill_counts() const;

  // Feeds ids[b] to slots[b] for every b; returns the logits [B, V], row b for slots[b] (valid
  // until the next call). A slot may take several consecutive rows (a run): they are its next
  // tokens in order, a prompt's chunk joining the step, and the run has one row of logits,
  // after its last token: the result is [runs, V], a row per run in order (with distinct slots,
  // [B, V]). Each row has the bits of feeding its slot one token at a time (prefill() past
  // position 0 does that too), whatever else shares the step; the lanes never split a run. A
  // step of several rows that are one run (a prompt's chunk read alone) still runs on every
  // lane: the lanes without rows take their shares of the experts and the head's panels.
  // REQUIRES: same length as ids, each in [0, slots()). Throws InputError for an id outside
  // [0, vocab), a slot out of range, or a slot in two runs. Called from a thread running a job of the
  // lanes' pool (whose other threads are then busy), the step runs on that thread as one lane.
  // When a lane of the step fails, the others
  // stop at their next meeting point and step() throws the first lane's exception, once every
  // lane has stopped; the failed step's slots are then part-way through it (reset them).
  std::span<const float> step(std::span<const int> slots, std::span<const int32_t> ids);

  // Tests only: each lane of a step on several lanes calls hook(lane) before its rows, and each
  // lane of prefill_many before it takes a prompt; what the hook throws is that lane's failure
  // (say a bad_alloc). An empty hook removes it.
  void set_lane_hook_for_testing(std::function<void(int lane)> hook);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trex::model
