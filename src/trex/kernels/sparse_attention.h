// Shared-KV sparse attention with a per-head sink (DeepSeek-V4 core attention), forward and
// backward. One KV head is shared by all H query heads and serves as key and value (K = V).
//
// Shapes (one document of s tokens; positions and blocks restart per document):
//   q [s, H, hd] T;  kv [s, hd] T (the window keys, one per token);  kv_comp [n_comp, hd] T
//   (compressed entries); comp_idx [s, k_comp] int32: the compressed entries query t attends to,
//   -1 for an unused slot (ratio 4: the indexer's top-k; ratio 128: every visible entry, see
//   sparse_attention_dense_index; ratio 0: k_comp = 0); sink [H] fp32.
//   o [s, H, hd] T;  lse [s, H] fp32 (log of the softmax denominator, sink included).
// Key set of query t: window keys j = max(0, t-win+1)..t, then comp_idx[t, :] (tokens first).
//   s_j = tau <q_h, key_j> (tau = hd^-1/2);  M = max(max_j s_j, z_h);
//   Zs = sum_j exp(s_j - M) + exp(z_h - M);  p_j = exp(s_j - M) / Zs;  o_h = sum_j p_j key_j
// Backward (p recomputed as exp(s_j - lse)):
//   dp_j = <do_h, key_j>;  D = <do_h, o_h> = sum_j p_j dp_j, taken as
//   sum_j p_j dp_j / (sum_j p_j + p_sink) (o is not an input);  ds_j = p_j (dp_j - D);
//   dq_h = tau sum_j ds_j key_j
//   dkey_j += tau ds_j q_h + p_j do_h  (summed over heads and queries);  dz_h = -sum_t p_sink D
// The inverse RoPE on o that follows is rope_apply with sign -1, applied by the caller.
// T is float or core::bf16 (storage); scores, softmax and accumulation are fp32. A token's
// H x |S_t| scores and H x hd outputs are register-tiled products over its key rows where they
// lie (bf16 keys widened once per token), the window's scores over a per-thread transposed block
// of the window keys (four FMA chains per score, no horizontal reduction), see attention_tiles.h; tokens are split over the
// pool.
// Backward: dkv and dkv_comp are summed over fixed token chunks (not thread-dependent) into a
// workspace and the chunk partials added in chunk order, so every result is bit-identical for
// any thread count. REQUIRES: 0 <= comp_idx < n_comp or -1; outputs do not alias inputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

struct SparseAttnShape {
  int64_t s = 0;       // query tokens (= window keys)
  int64_t heads = 0;   // H
  int64_t hd = 0;      // head dim (keys, values, queries)
  int64_t window = 0;  // win >= 1 (the kernels throw std::invalid_argument otherwise, when s, H, hd > 0)
  int64_t n_comp = 0;  // rows of kv_comp
  int64_t k_comp = 0;  // columns of comp_idx (0: window only)
};

// comp_idx for ratio-128 layers: query t sees entries i < floor((t+1)/ratio), all of them.
// Returns [s, k_comp] with k_comp = min(n_comp, floor(s/ratio)), -1 padded.
std::vector<int32_t> sparse_attention_dense_index(int64_t s, int ratio, int64_t n_comp,
                                                  int64_t* k_comp);

// comp_prob (optional, [s, k_comp] fp32): sum over heads of p of each compressed slot (0 for an
// unused slot): the indexer's KL teacher before normalisation.
template <class T>
void sparse_attention_forward(const T* q, const T* kv, const T* kv_comp, const int32_t* comp_idx,
                              const float* sink, T* o, float* lse, float* comp_prob,
                              const SparseAttnShape& shape, core::ThreadPool* pool = nullptr);

// How the forward splits a call's tokens over the threads (sparse_attention_forward runs by it;
// aura's performance model prices query_block by it, so the two cannot drift apart): blocks of
// block_tokens tokens (the key-column blocks of its window: window x ceil(64 / window) tokens,
// 64 at window 64); thread i of T starts at block first_block(i, T) and claims blocks upward
// from there (past the last, on from block 0), skipping claimed ones, and claims its next block
// as it starts one; each block runs in pieces of `piece` tokens (query_block, at least 1) taken
// in order from the block's own counter. Once every block is claimed, a thread takes the pieces
// left in the blocks still running, from the block after the last one it ran onwards.
struct SparseAttnForwardSplit {
  int64_t tokens = 0, block_tokens = 1, blocks = 0, piece = 1;
  int64_t first_block(int64_t thread, int64_t threads) const { return blocks * thread / threads; }
  int64_t block_begin(int64_t b) const { return b * block_tokens; }
  int64_t block_end(int64_t b) const { return std::min(tokens, (b + 1) * block_tokens); }
  int64_t pieces() const;  // the call's pieces: each block's ceil(tokens / piece), summed
};
SparseAttnForwardSplit sparse_attention_forward_split(int64_t tokens, int64_t window, int64_t query_block);

// One thread's order of blocks under the split, the one function that states it: the kernel
// walks it with atomic claims, aura's model (attention_forward_schedule) plays it out with a
// token's time its keys, so the two cannot drift apart. claim(from) takes the first unclaimed
// block from `from` on (wrapping) and returns it, or blocks if none is left.
// begin: the thread's first block, claimed from first_block(thread, threads); claim_after: the
// block after it, claimed as the thread starts its first (the kernel calls both at once; the
// model first claims every thread's first block, in thread order). block(): the block to take
// pieces of now, blocks once the walk is done; next(): the current block has no pieces left.
// Own blocks first (each next() moves on to the block claimed ahead and claims the one after
// it), then, with none left to claim, the blocks after the last own one, (last + i) mod blocks
// for i = 1..blocks, helping their owners finish.
struct SparseAttnForwardWalk {
  int64_t blocks = 0;
  int64_t own = 0;    // the own block running now (blocks: own blocks done)
  int64_t after = 0;  // the own block claimed to run next (blocks: none)
  int64_t last = 0;   // the last own block begun
  int64_t help = 0;   // 0: own blocks; i in 1..blocks: helping (last + i) mod blocks; past: done

  explicit SparseAttnForwardWalk(int64_t n_blocks) : blocks(n_blocks), after(n_blocks) {}
  template <class Claim>
  void begin(const SparseAttnForwardSplit& sp, int64_t thread, int64_t threads, Claim&& claim) {
    own = last = blocks > 0 ? claim(sp.first_block(thread, threads)) : blocks;
  }
  template <class Claim>
  void claim_after(Claim&& claim) {
    after = own < blocks ? claim(own + 1) : blocks;
  }
  int64_t block() const {
    if (help == 0 && own < blocks) return own;
    const int64_t i = help == 0 ? 1 : help;
    return i <= blocks ? (last + i) % blocks : blocks;
  }
  // The block this thread runs after the current one, if it is an own one (blocks if not): where
  // its requests ahead may go on.
  int64_t next_own() const { return help == 0 && own < blocks ? after : blocks; }
  template <class Claim>
  void next(Claim&& claim) {
    if (help == 0 && own < blocks) {
      last = own;
      own = after;
      claim_after(claim);
      return;
    }
    help = help == 0 ? 2 : help + 1;
  }
};

// Floats of workspace the backward needs (the caller may pass nullptr to have it allocated).
// It does not depend on the active tuning: every chunk count the backward may be tuned to fits.
int64_t sparse_attention_backward_workspace(const SparseAttnShape& shape);

// lse as the forward wrote it (the output o is not needed: D comes from P and dP). dq, dkv,
// dkv_comp and dsink are overwritten. dq must not overlap q or d_o: for fp32 the backward reads a
// token's q and d_o rows in place while it writes that token's dq rows (checked by an assert in
// debug builds).
template <class T>
void sparse_attention_backward(const T* q, const T* kv, const T* kv_comp, const int32_t* comp_idx,
                               const float* sink, const float* lse, const T* d_o,
                               T* dq, T* dkv, T* dkv_comp, float* dsink,
                               const SparseAttnShape& shape, float* workspace = nullptr,
                               core::ThreadPool* pool = nullptr);

// The eager chain: gather the keys of every query into a padded [s, K, hd] tensor with a mask,
// batched matmuls, scale, masked fill, concatenated sink column, softmax as max / subtract / exp /
// sum / divide, slice, matmul; the backward likewise op by op, index_add for dkv, with D from
// the probabilities and dp as the kernel takes it (sum p dp / (sum p + p_sink)), not from o.
template <class T>
void sparse_attention_forward_ref(const T* q, const T* kv, const T* kv_comp,
                                  const int32_t* comp_idx, const float* sink, T* o, float* lse,
                                  float* comp_prob, const SparseAttnShape& shape,
                                  core::ThreadPool* pool = nullptr);
template <class T>
void sparse_attention_backward_ref(const T* q, const T* kv, const T* kv_comp,
                                   const int32_t* comp_idx, const float* sink, const float* lse, const T* d_o, T* dq, T* dkv, T* dkv_comp,
                                   float* dsink, const SparseAttnShape& shape,
                                   core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
