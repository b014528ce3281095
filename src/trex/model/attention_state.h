// The private state of AttentionLayer, shared by its training path (attention.cc) and its
// decoding path (attention_decode.cc): the layer's shapes, its RoPE table, and the activations
// the last forward saved for the backward. Not part of the model's interface.
#pragma once

#include <cstdint>
#include <vector>

#include "trex/core/aligned_vector.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/model/attention.h"

namespace trex::model {

namespace attention_detail {

using Buf = core::aligned_vector<float>;

// b's data, grown to at least n floats.
inline float* ptr(Buf& b, int64_t n) {
  if (int64_t(b.size()) < n) {
    b.reserve(size_t(n));  // capacity n, not libstdc++'s doubling: the huge page at n's end faults in whole
    b.resize(size_t(n));
  }
  return b.data();
}

inline void add_into(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace attention_detail

struct AttentionLayer::State {
  // Shapes.
  int ratio = 0;
  int64_t d = 0, qlr = 0, H = 0, hd = 0, rd = 0, G = 0, olr = 0, win = 0;
  int64_t C = 0;                          // compressor width c * hd
  int64_t IH = 0, Ihd = 0, top_k = 0;     // indexer
  float eps = 1e-6f;
  float lambda = 1.f;
  kernels::RopeFreqConfig freq_config;
  std::vector<double> freq;
  kernels::RopeTable table;

  // The last forward's batch.
  int64_t T = 0;
  std::vector<DocSpan> docs;
  std::vector<int64_t> pos;              // [T]
  std::vector<int64_t> comp_off;         // [docs + 1]: first compressed entry of each document
  std::vector<int64_t> comp_pos;         // [entries]: i * m
  std::vector<int64_t> idx_off;          // [docs + 1]: first comp_idx element of each document
  std::vector<int64_t> k_comp;           // [docs]: comp_idx columns of each document
  std::vector<int32_t> comp_idx;         // per document [s, k_comp]
  int64_t n_entries = 0;
  bool has_indexer_grads = false;
  bool skip_indexer_loss = false;  // prefill: the forward without L_I (nothing will train)
  // prefill with a decoder's packed weights: forward's projections of at most
  // kPackedPrefillTokens tokens run on them (project()); null otherwise.
  PackedWeights* prefill_packed = nullptr;
  attention_detail::Buf pack_x, pack_y;  // project()'s gathered rows

  // Saved activations.
  attention_detail::Buf x, qa, qr, q0, q, kva, kv, kt, zt, kc0, kc, o, lse, oi, u, comp_prob;
  // The compressor's softmax statistics (kv_compress_forward_keeping_stats), [entries, 3 hd] for
  // ratio != 4, none for ratio 4.
  attention_detail::Buf comp_stats;
  // Indexer (ratio 4): inputs of its backward and the gradients its KL loss gives.
  attention_detail::Buf qI, kIt, kIz, kI0, kI, wI, dqI, dkI, dwI;
  // Backward scratch.
  attention_detail::Buf du, doi, dO, dq, dkv, dkc, dtmp, dnorm, dkt, dzt, dwork, dape;

  // decode_rows' working arrays, kept from call to call (a decoder's lane has layers of its own):
  // a call had allocated ~19 vectors and ~14 more per row (~600 allocations an 8-row step at
  // v4-nano). Each is written before it is read in a call (o and score zeroed, selected and
  // keys cleared there).
  struct DecodeScratch {
    std::vector<int64_t> pos, selected;
    std::vector<float> qa, qr, q0, qn, q, kva, kvn, ckt, czt, ikt, izt, qIa, qI, wI, oi;
    std::vector<float> k0, kn, score, dotsI, iT, o, sc, kT, dots, u, og, ug;
    std::vector<const float*> entries, keys;
  } dec;

  bool packed_prefill(int64_t T) const {
    return prefill_packed != nullptr && T <= AttentionLayer::kPackedPrefillTokens;
  }
  // y [T, out] (row stride ldy) = x [T, in] (row stride ldx) W^T, w [out, in] (attention.cc).
  void project(const float* x, int64_t ldx, const float* w, int64_t T, int64_t out, int64_t in,
               float* y, int64_t ldy);

  void ensure_table(int64_t max_pos) {
    if (table.max_pos >= max_pos) return;
    int64_t n = std::max<int64_t>(64, table.max_pos);
    while (n < max_pos) n *= 2;
    table = kernels::rope_table(freq, n);
  }
  void rope(const float* in, float* out, const int64_t* p, int64_t rows, int64_t heads,
            int64_t dim, int sign) {
    if (rows == 0) return;
    kernels::rope_apply(in, out, p, rows, heads, dim, table, sign);
  }
  void norm_fwd(const float* in, const float* w, float* out, int64_t rows, int64_t dim) {
    if (rows == 0) return;
    kernels::rmsnorm_forward(in, w, out, rows, dim, eps);
  }
  // dx = RMSNorm backward; when w is given, its gradient is added into dw.
  void norm_bwd(const float* in, const float* w, const float* dy, float* dx, float* dw,
                int64_t rows, int64_t dim) {
    if (rows == 0) return;
    if (w == nullptr) {
      kernels::rmsnorm_backward(in, static_cast<const float*>(nullptr), dy, dx,
                                static_cast<float*>(nullptr), rows, dim, eps);
      return;
    }
    float* scratch = attention_detail::ptr(dnorm, dim);
    kernels::rmsnorm_backward(in, w, dy, dx, scratch, rows, dim, eps);
    if (dw) attention_detail::add_into(dw, scratch, dim);
  }
};

}  // namespace trex::model
