// Lightning indexer (DeepSeek-V4 ratio-4 layers): scores over compressed entries, top-k
// selection, and the gradient of its sparse KL loss.
//
// Shapes (one document of s tokens; IH indexer heads of dim Ihd; n_comp compressed entries):
//   qI [s, IH, Ihd] T (RoPE applied);  kI [n_comp, Ihd] T (compressed, normed, RoPE applied);
//   w [s, IH] fp32, already scaled by Ihd^-1/2 IH^-1/2;  I [s, n_comp] fp32;
//   idx [s, k] int32 and top [s, k] fp32: the selected entries and their scores.
//   I_ti = sum_h w_h ReLU(<qI_h, kI_i>) for i < v_t = floor((t+1)/ratio), else -inf.
// Top-k: the min(k, v_t) largest I_ti, in descending score order, ties broken by the lower
// index first (trex's rule); the remaining slots get idx -1 and score -inf.
//
// Sparse KL (the indexer's training loss; x and qr are detached upstream, so only qI, kI and w
// get gradients). teacher [s, k] fp32: the main attention's probability mass of each selected
// entry summed over heads (sparse_attention_forward's comp_prob), normalised here per row:
//   p_ti = teacher_ti / sum_i teacher_ti;  q_ti = softmax over selected i of I_ti;
//   L = lambda / N sum_t sum_i p_ti (ln p_ti - ln q_ti)   (0 ln 0 = 0; N = rows with a selection)
//   dI_ti = lambda / N (q_ti - p_ti);  u = <qI_h, kI_i>;  dw_h = sum_i dI_ti ReLU(u);
//   du = dI_ti w_h [u > 0];  dqI_h = sum_i du kI_i;  dkI_i += du qI_h (over every query)
// A row whose teacher mass is 0 contributes nothing (p = 0 there; it is counted in N).
// T is float or core::bf16 (storage); arithmetic is fp32. Tokens are split over the pool; dkI is
// summed per fixed token chunk and reduced in chunk order, so results do not depend on the
// thread count. REQUIRES: ratio >= 1; idx entries < n_comp or -1.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

struct IndexerShape {
  int64_t s = 0;       // tokens
  int64_t heads = 0;   // IH
  int64_t hd = 0;      // Ihd
  int64_t n_comp = 0;  // compressed entries (rows of kI)
  int64_t top_k = 0;   // k
  int ratio = 4;       // compression ratio (visibility)
};

// Dense scores I [s, n_comp] (the eager path and the tests need them; the model uses
// indexer_select, which never materialises them).
template <class T>
void indexer_scores(const T* qI, const T* kI, const float* w, float* I, const IndexerShape& shape,
                    core::ThreadPool* pool = nullptr);
// Top-k of dense scores.
void indexer_topk(const float* I, int32_t* idx, float* top, const IndexerShape& shape,
                  core::ThreadPool* pool = nullptr);
// Fused scores and top-k: per block of tokens one GEMM over the visible entries, ReLU and the
// head-weighted sum in registers, then the selection, without the [s, n_comp] scores in memory.
template <class T>
void indexer_select(const T* qI, const T* kI, const float* w, int32_t* idx, float* top,
                    const IndexerShape& shape, core::ThreadPool* pool = nullptr);

// Floats of workspace indexer_kl_backward needs (nullptr: allocated inside).
int64_t indexer_kl_workspace(const IndexerShape& shape);
// Returns L; writes dqI [s, IH, Ihd], dkI [n_comp, Ihd] and dw [s, IH] (overwritten).
template <class T>
double indexer_kl_backward(const T* qI, const T* kI, const float* w, const int32_t* idx,
                           const float* teacher, float lambda, T* dqI, T* dkI, float* dw,
                           const IndexerShape& shape, float* workspace = nullptr,
                           core::ThreadPool* pool = nullptr);

// The eager chains: scores as one big matmul [s IH, n_comp], ReLU, multiply by w, sum over heads,
// masked fill (fresh tensors each); top-k as a full sort of each row; the KL gradient op by op
// over gathered [s, k, Ihd] keys, with index_add for dkI.
template <class T>
void indexer_scores_ref(const T* qI, const T* kI, const float* w, float* I,
                        const IndexerShape& shape, core::ThreadPool* pool = nullptr);
void indexer_topk_ref(const float* I, int32_t* idx, float* top, const IndexerShape& shape);
template <class T>
double indexer_kl_backward_ref(const T* qI, const T* kI, const float* w, const int32_t* idx,
                               const float* teacher, float lambda, T* dqI, T* dkI, float* dw,
                               const IndexerShape& shape, core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
