// The gradient of one training step over every rank, summed in the order a single process
// would sum it, so that a parallel run reproduces the single-process run bit for bit, and
// reduce-scattered: each rank ends the step with the summed gradient of its own shard of the
// parameters only (ZeRO-1: the trainer's optimizer updates that shard, gather_weights() then
// gives every rank the whole updated model). The shards are dist::ShardMap's: dense parameters
// split over every rank, each routed expert's over its expert-data-parallel group only, so an
// expert's gradient is reduced to, and its optimizer state kept on, ranks that compute it. A
// shard is a list of flat ranges, held packed (gradient(), the optimizer's state).
//
// A step of M micro-batches runs in M / world rounds; in round j rank r runs micro-batch
// k = j world + r, with the model's gradients zeroed first. While the backward runs, each time
// the gradient of a range of parameters is final (a layer, the heads, the embedding:
// Transformer::set_grad_final_hook) its piece of every shard starts on its way to the shard's
// rank (MPI_Ialltoallv: bytes, no arithmetic), so the exchange of the last layers overlaps the
// backward of the first. add_round() waits for them, exchanges the routed experts' gradients
// (below), and the shard's rank adds the pieces in micro-batch order, acc += g_k; the single
// process does exactly that, one micro-batch at a time. Routed experts under expert (and
// expert-tensor) parallelism: the gradient of expert e (each width shard of it) for micro-batch
// k was computed by its owner in k's rank's expert group from k's rows alone
// (MoeLayer::source_grads); the owner sends it to the shard's rank, which adds it at the same
// place in the order (every element has one owner, so its chain of additions over the
// micro-batches is the single process's; which rank adds it changes nothing). The result is identical for every (dp, ep) layout,
// so a checkpoint written under one layout resumes under any other bit for bit. With etp > 1
// the MoE layers' outputs and input gradients are sums of shard partials (model/moe.h), equal to
// the single process's up to rounding; every layout with the same etp still gives the same bits.
//
// Traffic per round: every rank sends and receives about one gradient's worth of floats
// (parameters + its expert source gradients), against world x that for the all-gather this
// replaced, and world - 1 / world x 2 for a ring all-reduce (whose sums would depend on the
// layout).
//
// On one machine (dist::SharedWindow) the same pieces go through shared memory instead of
// messages: the backward copies each final range's pieces of the other ranks' shards into this
// rank's region (the "post"), add_round() publishes the expert gradients and the loss there,
// the ranks synchronise once, and each shard's rank reads the pieces straight from every
// rank's region, adding them in the same order (same bits; TREX_DIST_SHM=0 forces messages).
// ZeRO-1's weights go the same way. A region is rewritten only after its readers are done:
// the reads of a round end before the step's expert-load all-reduce (finish_step) or the next
// round's synchronisation, the reads of the weights before the next step's grad_norm()
// all-gather; both collectives are entered only after the reads, so no extra barrier is needed.
//
// The losses (ce_sum) are gathered and added in micro-batch order; the expert load is summed
// over ranks with one integer all-reduce per step (exact), so the balancing bias moves
// identically on every rank. The gradient norm is a sum of squares over fixed chunks of
// kNormChunk elements, the chunks' sums added in order: the same bits
// whatever the layout: each chunk's sum is computed by the rank holding its first element, which
// receives the chunk's elements held by other ranks first (one all-to-all of the few pieces).
//
// Streamed round (stream_round(), for the swap optimizer's update during the backward): in the
// step's last round the reducer sums each final range's piece of the shard as soon as every
// rank has posted its piece of that range (shared memory: each rank publishes a count of the
// ranges it has posted in its region's header; messages: that range's MPI_Ialltoallv has
// completed), checked without waiting each time the backward reports a range, and hands the
// summed range on; add_round() sums and hands on the rest. Each element gets the same additions
// in the same order as in an unstreamed round, so the bits are the same. If this rank's backward
// ends first, add_round() keeps taking ranges as the other ranks post them before it waits for
// them (take_while_waiting). A range that holds
// routed experts' elements of the shard (expert parallelism) is handed on only after add_round()
// has added their gradients from the owners.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/dist/context.h"
#include "trex/dist/shard_map.h"
#include "trex/dist/shared_window.h"
#include "trex/model/transformer.h"

namespace trex::dist {

// The gradient norm of g [n] as the chunked sum above (what a single process computes).
double chunked_grad_norm(const float* g, int64_t n);

class StepReducer {
 public:
  // Takes the model's gradient-final hook (its one slot) for itself, at any world size: a
  // consumer of final ranges registers with stream_round() instead.
  StepReducer(Context& context, model::Transformer& model);
  ~StepReducer();
  StepReducer(const StepReducer&) = delete;
  StepReducer& operator=(const StepReducer&) = delete;

  // Rounds per step of M micro-batches, and the micro-batch this rank runs in round j.
  int64_t rounds(int64_t micro_batches) const { return micro_batches / context_.world_size(); }
  int64_t micro_batch(int64_t round) const { return round * context_.world_size() + context_.rank(); }

  // Every rank's shard (all parameters for one rank), and this rank's ranges and size.
  const ShardMap& shard_map() const { return map_; }
  const std::vector<ShardRange>& shard_ranges() const { return map_.ranges(context_.rank()); }
  int64_t shard_size() const { return size_; }

  void begin_step();
  // Called with [lo, hi) in packed shard offsets (within [0, shard_size())) once gradient() holds the
  // step's final sum there.
  using ReducedHook = std::function<void(int64_t lo, int64_t hi)>;
  // Makes the next round a streamed one (header comment); call it before that round's
  // forward_backward, for the step's last round only. hook gets every element of the shard
  // exactly once, on this thread: during the backward for the ranges every rank has posted by
  // then, in add_round() for the rest.
  void stream_round(ReducedHook hook);
  // After this rank's forward_backward of the round (st: its loss statistics). Collective.
  void add_round(const model::LossStats& st);
  // After the last round: sums the step's expert load over the ranks. Collective.
  void finish_step();

  float* gradient() { return acc_.data(); }  // [shard_size()]: the step's gradient of the shard, packed
  double ce_sum() const { return ce_; }
  const std::vector<std::vector<int64_t>>& expert_load() const { return load_; }
  // The norm of the whole step gradient (chunked_grad_norm of the full vector). Collective.
  double grad_norm() const;
  // mine [shard_size()] bf16: this rank's updated shard, packed -> weights [parameters]: every
  // rank's shard in place (mine may already be in place: one range). Collective.
  void gather_weights(const core::bf16* mine, core::bf16* weights) const;
  // Floats one rank sends per round (for the metrics).
  int64_t floats_per_round() const;
  // Exchanges posted during the backward so far (for the tests: > 1 means overlapped buckets).
  int64_t buckets_last_round() const { return buckets_; }

 private:
  // A run of an expert's gradient, in the flat parameter vector [begin, begin + count), for the
  // micro-batch of rank `source`, computed by rank `owner`, at `from` in the owner's source
  // gradients (all layers' source_grads concatenated), summed by rank `dest` at `at` in its
  // packed shard.
  struct Segment {
    int source = 0, owner = 0, dest = 0;
    int64_t begin = 0, count = 0, from = 0, at = 0;
  };
  // A piece of a norm chunk: `count` elements at `from` in this rank's packed gradient (or, when
  // received, in the received pieces), at `offset` in the chunk.
  struct NormPiece {
    int64_t offset = 0, count = 0, from = 0;
    bool received = false;
  };
  Context& context_;
  model::Transformer& model_;
  int64_t n_ = 0;                      // parameters
  ShardMap map_;
  int64_t size_ = 0;                   // this rank's shard (packed)
  std::vector<int64_t> starts_;        // [my ranges + 1]: packed offset of each of my ranges
  int64_t extra_ = 0;                  // floats of expert source gradients on this rank
  std::vector<int64_t> layer_extra_offset_;  // per MoE layer, into the source gradients
  std::vector<Segment> segments_;      // cut where the holding rank changes, in the order they are added
  std::vector<int64_t> send_count_, recv_count_;  // [ranks] expert floats per round
  std::vector<float> acc_, send_, recv_, extra_buf_;
  std::vector<float> dense_recv_;      // [ranks][shard size]: each rank's micro-batch gradient of the shard
  std::vector<std::vector<float>> staging_;  // messages: this round's packed pieces sent, until they are done
  // The gradient norm: the chunks this rank sums (ascending) and their pieces, the pieces it
  // sends to other chunks' ranks ({packed at, count}, by destination), the counts, every rank's
  // chunks.
  std::vector<int64_t> norm_chunks_;
  std::vector<std::vector<NormPiece>> norm_pieces_;
  std::vector<std::pair<int64_t, int64_t>> norm_out_;
  std::vector<int64_t> norm_send_count_, norm_recv_count_;
  std::vector<std::vector<int64_t>> norm_chunks_of_;
  int64_t norm_per_ = 0;               // the most chunks one rank sums
  bool norm_exchange_ = false;         // some chunk has pieces on several ranks
  void plan_norm();
  int64_t reported_ = 0, buckets_ = 0, posted_ = 0;  // this round's final floats and exchanges

  // Shared memory (null: messages). Each rank's region: the loss (one double) and the count of
  // ranges posted (published_count), padded to 64 bytes, the pieces of the other ranks' shards of its micro-batch gradient (shard order,
  // its own skipped), its expert source gradients, its shard of the bf16 weights.
  std::unique_ptr<SharedWindow> shm_;
  static constexpr int64_t kShmDense = 64;           // byte offset of the pieces in a region
  std::vector<int64_t> shm_extra_, shm_weights_;     // [ranks] byte offsets in each rank's region
  mutable bool grad_readers_ = false, weight_readers_ = false;       // a region's last contents may be in use
  float* shm_floats(int rank, int64_t byte_offset) const {
    return reinterpret_cast<float*>(static_cast<char*>(shm_->region(rank)) + byte_offset);
  }
  // Where writer w keeps its piece of shard q in its region (floats from kShmDense).
  int64_t dense_slot(int w, int q) const;
  // Waits for the readers of this rank's gradient pieces (one synchronisation) when no
  // collective has shown them done since.
  void gradient_region_writable();

  void add_round_shared(const model::LossStats& st);  // add_round through shm_

  // The model's gradient-final hook: posts the exchange of [lo, hi)'s pieces (several ranks),
  // and in a streamed round takes what has arrived.
  void grads_final(int64_t lo, int64_t hi);
  void post_pieces(int64_t lo, int64_t hi);

  // Streamed round (stream_round). Buckets are the round's final ranges (flat offsets) in the
  // order posted; the leading `taken_` of them are summed into acc_.
  ReducedHook stream_;
  std::vector<ShardRange> buckets_posted_;
  size_t taken_ = 0;
  std::vector<ShardRange> held_;          // summed, waiting for the expert segments (shard offsets)
  std::vector<ShardRange> expert_spans_;  // this shard's expert segments, merged (shard offsets)
  int64_t published_ = 0, round_base_ = 0;  // shared memory: ranges posted since construction
  int64_t* published_count(int rank) const {  // in each region's header, after the loss
    return reinterpret_cast<int64_t*>(static_cast<char*>(shm_->region(rank)) + 8);
  }
  ShardRange in_shard(const ShardRange& flat) const;  // flat range -> its piece of the shard, packed offsets
  bool arrived(size_t bucket) const;   // every rank's piece of the shard in that bucket is here
  void take_arrived();                 // sums and hands on the arrived buckets, in order
  // add_round of a streamed round, before its wait for the other ranks: takes each bucket as it
  // arrives (polling, sleeping between polls) until every one has, so the ranges other ranks
  // finish after this rank's backward reach the hook while it would otherwise only wait.
  void take_while_waiting();
  void sum_dense(int64_t lo, int64_t hi);  // acc_[lo, hi) += every rank's piece, in rank order
  void sum_rest();                     // add_round's dense sums: what the backward did not take
  void hand_on_rest();                 // end of a streamed round: held and untaken buckets
  double ce_ = 0;
  std::vector<std::vector<int64_t>> load_;
};

}  // namespace trex::dist
