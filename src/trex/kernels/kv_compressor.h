// KV compressor pooling (DeepSeek-V4 CSA/HCA): softmax-gated pooling of m token rows into one
// compressed entry, per channel, forward and backward. fp32 only: the model computes compressor
// projections and pooling in fp32 (spec section 2).
//
// Shapes (s tokens of one document, c = 2 when m = 4 else 1, C = c hd):
//   kt, zt [s, C] (the projections W_ckv x and W_cg x), ape [m, C], k [n, hd] with n = floor(s/m)
//   (a trailing partial block emits no entry; documents are pooled one call each, so no entry
//   crosses a document boundary).
// Entry i, channel e < hd, pools rows r with key kt, score zt + ape:
//   m != 4 (disjoint, m = 128 in the model): rows r < m are token i m + r at channel e, ape row r;
//   m == 4 (overlapping, width 2m, stride m): rows r < 4 are token 4(i-1) + r at channel e with
//     ape row r (absent for i = 0: score -inf), rows 4 <= r < 8 are token 4i + r - 4 at channel
//     hd + e with ape row r - 4.
//   S_r = softmax_r(score_r),  k_ie = sum_r S_r kt_r
// Backward (dk [n, hd] given): dkt_r = S_r dk,  dzt_r = S_r dk (kt_r - k),  dape_row += dzt_r.
// Each (token, channel) of kt/zt feeds at most one entry, so dkt and dzt are written, not summed;
// positions no entry reads get 0. dape is overwritten with the sum over entries. The RMSNorm and
// RoPE that follow the pooling are the rmsnorm and rope kernels, applied by the caller.
// dape is summed in an order fixed by the shape alone, so results are bit-identical for any pool
// size and (head dims a multiple of 8: the AVX2 path's last hd % 8 channels take the scalar
// std::exp) vector path: ratio 4 sums each chunk of 64 entries in entry order, then the chunks in
// order; other ratios sum every entry in entry order.
#pragma once

#include <cstdint>

#include "trex/core/thread_pool.h"

namespace trex::kernels {

// The rows of entry i: for row j, the token and channel offset it reads (kt/zt index
// token * C + offset + e) and its ape row. Returns the row count (m, or 2m for m == 4 with i > 0;
// m for i == 0, whose first half is absent).
struct CompressorRow {
  int64_t token;
  int64_t channel_offset;
  int64_t ape_row;
};
int compressor_rows(int64_t i, int ratio, int64_t hd, CompressorRow* rows);

inline int64_t compressor_entries(int64_t s, int ratio) { return s / ratio; }
// The ratio-4 backward's fixed chunks of entries: dape is summed per chunk in entry order, then
// over the chunks in order; a parallel item is one chunk and one channel block.
inline constexpr int64_t kCompressorR4ChunkEntries = 64;
inline int64_t compressor_width(int ratio, int64_t hd) { return ratio == 4 ? 2 * hd : hd; }
// The forward's parallel jobs: chunks of this many (entry, channel block) items, taken in turn.
// Ratio 4 takes 64 since session 25 (16 before): one process against 16, CPU time, 11 rounds,
// loaded 8.7, the model's [2048, 128] 1.25x on two threads and 1.04x on one, [4096, 512] 1.37x
// on two (each chunk's claim, walk set-up and cold first steps, and the threads' chunks
// interleaved in memory). Entries are independent: the chunking changes no bit. Since session
// 27 ratio != 4 on AVX-512 uses these chunks only with a tuned channel_block; untuned it takes
// whole entries one at a time from a counter (kv_compressor.cc forward_pipelined512).
inline int64_t compressor_forward_chunk_items(int ratio) { return ratio == 4 ? 64 : 16; }

// REQUIRES: ratio >= 1, hd >= 1; k does not alias the inputs.
void kv_compress_forward(const float* kt, const float* zt, const float* ape, float* k, int64_t s,
                         int64_t hd, int ratio, core::ThreadPool* pool = nullptr);
void kv_compress_backward(const float* kt, const float* zt, const float* ape, const float* dk,
                          float* dkt, float* dzt, float* dape, int64_t s, int64_t hd, int ratio,
                          core::ThreadPool* pool = nullptr);

// The softmax statistics the forward keeps for the backward (ratio != 4): per entry i, three rows
// of hd floats at stats + i compressor_stats_width(ratio, hd): the max of the scores, the sum of
// exp(score - max) and the exp-weighted sum of kt, per channel, as the forward summed them. With
// them the backward makes one pass over an entry's rows (exp, gradients) where it made three (a max
// pass, a sum pass, the gradient pass; perf, session 27: 25 / 29 / 45% of its samples, in
// proportion to their bytes from memory). They are 3 / ratio of kt's size (ratio 128: 2.3%).
// Ratio 4 keeps none (width 0): its backward holds an entry's 8 scores in registers, one pass.
inline int64_t compressor_stats_width(int ratio, int64_t hd) { return ratio == 4 ? 0 : 3 * hd; }

// kv_compress_forward that also writes stats [n, compressor_stats_width(ratio, hd)] (ratio 4:
// none; stats may then be null). The same k.
void kv_compress_forward_keeping_stats(const float* kt, const float* zt, const float* ape, float* k,
                                       float* stats, int64_t s, int64_t hd, int ratio,
                                       core::ThreadPool* pool = nullptr);
// kv_compress_backward with the statistics the forward kept (kv_compress_forward_keeping_stats of
// the same kt, zt, ape, s, hd, ratio): per channel the same operations in the same order as the
// backward that derives them again, and dape summed in entry order, so the same bits. Where
// kv_compress_backward splits by entries (AVX-512, ratio != 4, no channel_block tuned, 2^18
// floats per input and more) this reads them, one pass per row, and the threads split each
// entry's rows instead; elsewhere it derives them as kv_compress_backward does.
void kv_compress_backward_from_stats(const float* kt, const float* zt, const float* ape,
                                     const float* stats, const float* dk, float* dkt, float* dzt,
                                     float* dape, int64_t s, int64_t hd, int ratio,
                                     core::ThreadPool* pool = nullptr);

// Tests only: with on, the multi-thread backward for ratio != 4 (AVX-512, inputs of 1 MiB and
// more) adds every entry's dzt to dape from memory, the path an entry takes when it finishes
// before the entries ahead of it have added theirs, which otherwise depends on timing.
void kv_compress_backward_spill_for_test(bool on);

// The eager chain: gather rows into [n, R, hd] tensors (R = rows per entry, absent rows with
// score -inf), add ape, max, subtract, exp, sum, divide, multiply, sum over rows; the backward
// likewise, with index scatters and a sum over entries for dape.
void kv_compress_forward_ref(const float* kt, const float* zt, const float* ape, float* k,
                             int64_t s, int64_t hd, int ratio, core::ThreadPool* pool = nullptr);
void kv_compress_backward_ref(const float* kt, const float* zt, const float* ape, const float* dk,
                              float* dkt, float* dzt, float* dape, int64_t s, int64_t hd,
                              int ratio, core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
