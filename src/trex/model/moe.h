// One DeepSeek-V4 MoE layer, forward and backward over T tokens (spec sections 9 and 10):
// sqrtsoftplus gate, top-K selection by score plus a selection-only balancing bias (or, in the
// first hash_layers layers, a frozen token -> expert table), normalised and scaled routing
// weights, E routed experts and the shared experts as limited SwiGLU MLPs.
//
//   l = W_g x (fp32);  s = sqrt(softplus(l))
//   I = topK(s + b)  (score-routed; ties go to the lower expert index)  |  I = tid2eid[token] (hash)
//   w_k = gamma s_{I_k} / sum_k' s_{I_k'}
//   y = sum_k w_k-weighted Expert_{I_k}(x) + sum Shared(x)
//
// Tokens are dispatched per expert (counting sort: expert-major, token order inside an expert),
// so each expert is one GEMM over its rows (grouped_sgemm), and combined back in slot order k.
// The routing weight is applied before W2 (the swiglu kernel takes w), so dw comes out of the
// swiglu backward and reaches W_g through s, in hash layers too.
//
// The layer owns its non-parameter routing state: the bias b [E] (score-routed layers) and the
// table tid2eid [V, K] (hash layers). The table is a pure function of (hash_seed, token id):
// a splitmix64 stream with state (uint64(hash_seed) << 32) ^ token, drawing expert = next() % E
// and skipping experts already drawn, until K distinct experts are chosen.
//
// The width blocks: the three sums over an expert's width f (the W2 output, the input gradient
// dg W1 + du W3, and the routing-weight gradient <dh, a>) are computed as expert_width_blocks(f)
// partial sums over equal blocks of the width, added pairwise bottom-up (1 into 0, 3 into 2,
// then 2 into 0, ...). Why: under expert-tensor parallelism a peer holding a power-of-two run of
// blocks computes exactly that subtree of the sum, so the peers' partials added at the source in
// the same pairwise order give the single process's bits (a single chain over the width cannot
// be cut across peers without serialising them). g, u, h and their gradients are kept
// block-major: [block][row][f / blocks].
//
// Expert parallelism (set_exchange): the routed experts (and with shards() > 1 their width,
// expert-tensor parallelism: each peer computes its blocks' partial sums, which the source adds
// as above) are split over the peers of an ExpertExchange group; the dispatched rows travel to
// their expert's owner (counts first, then
// the rows with their routing weights), are computed there, and come back before the combine;
// backward mirrors it. The shared experts run while the dispatch is in flight. A row's result
// does not depend on which rows share its GEMM (gemm.h), so each token's output and input
// gradient are bit for bit those of the unsplit layer (with shards() dividing the width blocks;
// otherwise each peer's slice is one block and the results equal the unsplit layer's up to
// rounding). The owner's expert weight gradients are
// kept per source peer (source_grads), each computed from that peer's rows alone, so a caller
// can add them in the same order the unsplit layer would have.
//
// x [T, d] is the ffn-normed layer input; out [T, d] is overwritten. The layer copies what its
// backward needs; backward must follow the forward it belongs to. Parameter gradients are ADDED
// into the gradient tensors. T = 1 works (a generator calls it one token at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trex/core/aligned_vector.h"
#include "trex/model/config.h"
#include "trex/model/expert_exchange.h"

namespace trex::model {

class PackedWeights;  // packed_weights.h

// The tensors of one MoE layer ([out, in] row-major). P is const float* or float*.
template <class P>
struct MoeTensors {
  P gate = nullptr;                  // [E, d]
  std::vector<P> w1, w2, w3;         // per routed expert: [f, d], [d, f], [f, d]
  std::vector<P> shared_w1, shared_w2, shared_w3;  // per shared expert, same shapes
};
using MoeParams = MoeTensors<const float*>;
using MoeGrads = MoeTensors<float*>;

// Buffers a layer needs only while one forward or backward call runs (the expert outputs, every
// gradient in between). Layers that run one after another can share one, so a model holds one
// set instead of one per layer; a layer without one uses its own.
struct MoeScratch {
  core::aligned_vector<float> ye, dye, dh, dg, du, dw, dxs, dl, sdh, sdg, sdu;
  core::aligned_vector<float> leaves, dw_leaves;  // the width blocks' partial sums after the first
};

// The frozen token -> expert table of a hash layer: [vocab, top_k] expert ids (see above).
std::vector<int32_t> build_tid2eid(int vocab, int experts, int top_k, uint64_t hash_seed);

// How many blocks the sums over an expert's width f are cut into (see above): the largest of 4,
// 2, 1 that leaves blocks of at least 32 columns, a multiple of 16 (whole SIMD rows). An ETP
// degree that divides it trains bit for bit like one process.
int expert_width_blocks(int64_t f);

class MoeLayer {
 public:
  // Up to this many tokens (without an expert exchange) go through multi-row matrix-vector
  // products instead of GEMMs: each token's output then has the bits it has alone.
  static constexpr int64_t kFewTokens = 16;
  // With `packed` (a decoder's packed copies: a prefill or a step, never training) up to this
  // many: the packed products read each weight once per block of rows, where a GEMM packs every
  // weight again on each call. Measured to the longest prompt a lane prefills
  // (BatchDecoder::kLanePrefillMaxTokens): 8 prompts of 48 and 64 tokens prefilled at once took
  // 0.61 / 0.62 of the GEMM path's CPU (bench/prefill_bench, issue 16 session 19). Training (no
  // `packed`) keeps kFewTokens, so its bits do not depend on this.
  static constexpr int64_t kPackedFewTokens = 64;

  // hash: route by tid2eid (built from config.ffn.hash_seed) instead of by score.
  MoeLayer(const ModelConfig& config, bool hash);
  ~MoeLayer();
  MoeLayer(MoeLayer&&) noexcept;
  MoeLayer& operator=(MoeLayer&&) noexcept;

  bool hash() const;
  int experts() const;
  int top_k() const;

  // x [T, d]; ids [T] token ids (read by hash layers, < vocab); out [T, d] overwritten. With
  // `packed` (a decoder's PackedWeights) the few-token products run on its packed copies.
  void forward(const MoeParams& p, const float* x, const int32_t* ids, int64_t T, float* out,
               MoeScratch* scratch = nullptr, PackedWeights* packed = nullptr);
  // dout [T, d] -> dx [T, d] (overwritten). Parameter gradients are added into g.
  void backward(const MoeParams& p, const float* dout, float* dx, const MoeGrads& g,
                MoeScratch* scratch = nullptr);

  // The experts chosen by the last forward, [T, K] (in slot order), and their weights w.
  const std::vector<int32_t>& selected() const;
  const std::vector<float>& weights() const;
  // Tokens routed to each expert by the last forward, [E].
  const std::vector<int64_t>& load() const;

  // The selection bias [E] (zeros for a hash layer, which never reads it).
  std::vector<float>& bias();
  const std::vector<float>& bias() const;
  // b_e += rate * sign(mean_load - load_e) from load(); nothing for a hash layer.
  void update_bias(float rate);
  // The same from a given load [E] (a step's tokens over several forwards).
  void update_bias(float rate, std::span<const int64_t> load);

  // Runs the routed experts over `ex`'s group from the next forward on (nullptr: all here).
  // REQUIRES: experts() divisible by ex->ranks() / ex->shards(), the expert width by
  // ex->shards(); every peer calls forward/backward in step. With ranks() > 1 the layer adds no
  // routed-expert gradient into the MoeGrads of backward; it adds this peer's experts' (width
  // slices') gradients into source_grads() instead.
  void set_exchange(ExpertExchange* ex);
  // The experts this peer computes: [first_local_expert(), + local_experts()).
  int first_local_expert() const;
  int local_experts() const;
  // [source peer][local expert][w1 [fs, d] | w2 [d, fs] | w3 [fs, d]] (fs = f / shards(): this
  // peer's slice): the gradient of this peer's experts from the rows each source peer sent
  // (empty without an exchange of ranks() > 1).
  std::span<const float> source_grads() const;
  void zero_source_grads();

  // [vocab, K]; empty for a score-routed layer.
  std::vector<int32_t>& tid2eid();
  const std::vector<int32_t>& tid2eid() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace trex::model
