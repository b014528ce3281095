// One DeepSeek-V4 attention layer composed from the kernels, forward and backward (spec
// sections 6-8): low-rank query with q_norm and a weight-free per-head norm, one shared K = V
// head with kv_norm, RoPE on the last rd dims, sliding window, the compressor of ratio 4 (CSA,
// with the lightning indexer choosing the top-k entries) or 128 (HCA, every visible entry), the
// per-head sink, inverse RoPE on the output and the grouped low-rank output projection.
//
// Tokens arrive packed: T tokens made of documents (DocSpan), each its own sequence for
// attention: positions restart at 0, compressor blocks align to the document start, no key,
// entry or indexer candidate crosses a boundary (spec section 12). Projections run as one GEMM
// over all T tokens; the attention kernels run one document per call.
//
// The indexer learns only from its KL loss L_I (x and qr detached, teacher detached): its
// parameter gradients come from L_I, the backbone's from dout alone.
//
// Storage is fp32 throughout (parameters, activations, gradients). The layer keeps the
// activations its backward needs from the last forward; backward must follow the forward it
// belongs to. Parameter gradients are ADDED into the gradient tensors (the caller zeroes them
// once per step), so micro-batches accumulate.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trex/model/config.h"

namespace trex::model {

class PackedWeights;  // packed_weights.h

// Tokens [begin, begin + len) of a packed batch form one document. A batch's spans cover
// [0, T) in order, each len >= 1.
struct DocSpan {
  int64_t begin = 0;
  int64_t len = 0;
};

// The tensors of one attention layer, by their spec names ([out, in] row-major). P is
// const float* (parameters) or float* (gradients). Fields of parts the layer does not have are
// null (comp_* when ratio 0, idx_* unless ratio 4).
template <class P>
struct AttentionTensors {
  P wq_a = nullptr;       // [qlr, d]
  P q_norm = nullptr;     // [qlr]
  P wq_b = nullptr;       // [H*hd, qlr]
  P wkv = nullptr;        // [hd, d]
  P kv_norm = nullptr;    // [hd]
  P attn_sink = nullptr;  // [H]
  P wo_a = nullptr;       // [G*olr, H*hd/G]: group g's rows [g*olr, (g+1)*olr)
  P wo_b = nullptr;       // [d, G*olr]
  // compressor (ratio > 0), c = 2 if ratio 4 else 1
  P comp_wkv = nullptr;    // [c*hd, d]
  P comp_wgate = nullptr;  // [c*hd, d]
  P comp_ape = nullptr;    // [ratio, c*hd]
  P comp_norm = nullptr;   // [hd]
  // lightning indexer (ratio 4)
  P idx_wq_b = nullptr;          // [IH*Ihd, qlr]
  P idx_weights_proj = nullptr;  // [IH, d]
  P idx_comp_wkv = nullptr;      // [2*Ihd, d]
  P idx_comp_wgate = nullptr;    // [2*Ihd, d]
  P idx_comp_ape = nullptr;      // [4, 2*Ihd]
  P idx_comp_norm = nullptr;     // [Ihd]
};
using AttentionParams = AttentionTensors<const float*>;
using AttentionGrads = AttentionTensors<float*>;

// What decoding one more token of a sequence needs from the tokens before it, for one layer
// (AttentionLayer::decode fills it; start from a default-constructed or clear()ed cache).
struct AttentionCache {
  int64_t len = 0;                 // tokens decoded so far: the next token's position
  std::vector<float> window;       // [win, hd] roped kv rows, token t at row t % win
  // Compressor projections (kt, zt) of the tokens of the open block and, for ratio 4, of the
  // block before it (which the next entry also pools): token t at row t % rows, rows = m or 2m.
  std::vector<float> kt, zt;       // [rows, c hd]
  std::vector<float> comp;         // [entries, hd] compressed entries, normed and roped
  // The indexer's own compressor (ratio 4): the same for its projections and keys.
  std::vector<float> idx_kt, idx_zt;  // [8, 2 Ihd]
  std::vector<float> idx_comp;        // [entries, Ihd]
  void clear() { *this = AttentionCache(); }
};

class AttentionLayer {
 public:
  // `layer` is the main layer index (its compress ratio comes from the config); MTP blocks
  // pass ratio 0 through `ratio_override` >= 0.
  AttentionLayer(const ModelConfig& config, int layer, int ratio_override = -1);
  ~AttentionLayer();
  AttentionLayer(AttentionLayer&&) noexcept;
  AttentionLayer& operator=(AttentionLayer&&) noexcept;

  int ratio() const;

  // The compressed entries each query attended to in the last forward: per document in order,
  // [len, k_doc] row-major, -1 for an unused slot (ratio 4: the indexer's top-k with
  // k_doc = min(top_k, entries of the document); ratio 128: every visible entry; ratio 0: empty).
  // Tests use it to tell a selection flip from a wrong gradient.
  std::vector<int32_t> last_selection() const;

  // x [T, d]: the layer input after attn_norm (copied; the caller may reuse it). out [T, d] is
  // overwritten. Returns the indexer's KL loss L_I of this forward (already multiplied by
  // lambda_I; 0 unless ratio 4), averaged over every query row of the batch that has a
  // selection (so a packed batch weighs each such row once, whatever its document). Throws
  // InputError ("docs") when the spans do not tile [0, T).
  double forward(const AttentionParams& p, const float* x, std::span<const DocSpan> docs,
                 int64_t T, float* out);

  // Incremental decoding: x [d] is the next token of the cache's sequence (after attn_norm), at
  // position cache.len; out [d] (overwritten) is what forward gives for that position of the
  // sequence (up to rounding), and the cache advances by one token. Uses no state of forward.
  void decode(const AttentionParams& p, const float* x, AttentionCache& cache, float* out);

  // The same for B sequences at once: x [B, d], row b the next token of *caches[b]; out [B, d].
  // Rows of one cache must be consecutive: they are its next tokens in order (a prompt's chunk),
  // as that many one-row calls would feed them. The projections read each weight once for all
  // rows; each row's output has the bits a one-row call with the same `packed` gives it. With `packed` (a decoder's
  // PackedWeights) the projections run on its packed copies of the weights.
  void decode_rows(const AttentionParams& p, const float* x, int64_t B,
                   AttentionCache* const* caches, float* out, PackedWeights* packed = nullptr);

  // The same for a whole prompt at once: x [T, d] are the first T tokens of the cache's
  // sequence (REQUIRES: cache.len == 0); out [T, d] is forward's output for one document, and
  // the cache is left as T decode calls would leave it (up to rounding). Runs forward without
  // the indexer loss, so a backward must not follow it. With `packed` (a decoder's
  // PackedWeights) and at most kPackedPrefillTokens tokens the projections run on its packed
  // copies, as a step's do, instead of GEMMs that pack the weights again on every call.
  void prefill(const AttentionParams& p, const float* x, int64_t T, AttentionCache& cache,
               float* out, PackedWeights* packed = nullptr);
  // The longest prompt whose projections prefill runs on packed weights (MoeLayer::kPackedFewTokens,
  // where the MoE layer's products switch from packed copies to its GEMMs too).
  static constexpr int64_t kPackedPrefillTokens = 64;

  // dout [T, d] -> dx [T, d] (overwritten, the backbone's gradient only). Parameter gradients
  // (the indexer's from L_I) are added into g.
  void backward(const AttentionParams& p, const float* dout, float* dx, const AttentionGrads& g);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace trex::model
