// mHC (manifold-constrained hyper-connections, DeepSeek-V4): the pre-projection that mixes the
// n residual streams into one layer input, and the post-projection that writes the layer output
// back into the streams, forward and backward (spec section 4).
//
// Shapes (n streams of width d, R = (n+2) n mixing rows, nd = n d):
//   X [tokens, n, d] T (stream-major: xv = X[t] flattened is the length-nd vector);
//   phi [R, nd] fp32;  b [R] fp32;  scale [3] fp32 (s_0, s_1, s_2);
//   y [tokens, d] T;  pre, post [tokens, n] fp32;  C [tokens, n, n] fp32 (C[t][j][k], row j).
// Pre-projection, per token:
//   r = (mean(xv^2) + rms_eps)^-1/2  (weight-free RMS, applied after the matmul);  m = r (phi xv)
//   pre_i = sigma(m_i s_0 + b_i) + eps;  post_i = 2 sigma(m_{n+i} s_1 + b_{n+i})
//   Z_jk = m_{2n+jn+k} s_2 + b_{2n+jn+k};  C = rowsoftmax(Z) + eps;  C_jk /= sum_j C_jk + eps;
//   then iters - 1 times: rows C_jk /= sum_k C_jk + eps, columns as before;  y = sum_i pre_i X_i
// Post-projection: X'_k = post_k F + sum_j C_jk X_j  (the transposed mix C^T X), F [tokens, d].
// Backward as in the spec; the Sinkhorn backward recomputes its 2 iters - 1 intermediate n x n
// matrices per token rather than storing them.
//
// bf16 inputs stay bf16 until a kernel needs their values: X is read as bf16 by the projection,
// the RMS and the mix and widened in registers; no fp32 copy of X is ever written (the eager
// chain's early promotion is what made the paper's pre-projection memory-bound).
//
// Gradient conventions: mhc_post_backward overwrites dX; mhc_pre_backward ADDS its part into dX
// (the model runs the post backward first, then the pre backward, for the same X). dphi, db and
// dscale are overwritten with sums over tokens. Token work is split over the pool; the sums over
// tokens are either per-token values added in token order or column blocks owned by one thread,
// so every result is bit-identical for any thread count.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

inline constexpr int kMhcMaxStreams = 8;

struct MhcShape {
  int64_t tokens = 0;
  int64_t d = 0;
  int n = 4;             // streams, 1..kMhcMaxStreams
  int iters = 20;        // Sinkhorn iterations T
  float eps = 1e-6f;     // hc_eps
  float rms_eps = 1e-6f; // rms_norm_eps
  int64_t rows() const { return int64_t(n + 2) * n; }
};

template <class T>
void mhc_pre_forward(const T* X, const float* phi, const float* b, const float* scale, T* y,
                     float* pre, float* post, float* C, const MhcShape& shape,
                     core::ThreadPool* pool = nullptr);

// Whether mhc_pre_backward and mhc_head_backward run by tokens at this size on `threads`
// threads: where the row ISA is AVX-512 and there is at least one 256-token chunk of dphi's sums
// per thread. Then their tunings (block_tokens, column_block) are not read; aura's targets
// leave them out of the space (src/trex/aura/target.cc).
bool mhc_backward_runs_by_tokens(int64_t tokens, int threads);

// Floats of workspace mhc_pre_backward needs (nullptr: allocated inside).
int64_t mhc_pre_backward_workspace(const MhcShape& shape);

// dy [tokens, d] T; dpost [tokens, n] and dC [tokens, n, n] fp32 (from mhc_post_backward).
// dX += the pre-projection's part; dphi [R, nd], db [R], dscale [3] are overwritten.
template <class T>
void mhc_pre_backward(const T* X, const float* phi, const float* b, const float* scale,
                      const T* dy, const float* dpost, const float* dC, T* dX, float* dphi,
                      float* db, float* dscale, const MhcShape& shape, float* workspace = nullptr,
                      core::ThreadPool* pool = nullptr);

// out [tokens, n, d] T = post F + C^T X. out must not alias X.
template <class T>
void mhc_post_forward(const T* F, const T* X, const float* post, const float* C, T* out,
                      const MhcShape& shape, core::ThreadPool* pool = nullptr);
// G [tokens, n, d] T = dL/dout. Overwrites dF [tokens, d], dX [tokens, n, d], dpost [tokens, n],
// dC [tokens, n, n].
template <class T>
void mhc_post_backward(const T* G, const T* F, const T* X, const float* post, const float* C,
                       T* dF, T* dX, float* dpost, float* dC, const MhcShape& shape,
                       core::ThreadPool* pool = nullptr);

// The final head's mix (hc_head): the pre part alone with n rows and a single scale, no Sinkhorn:
//   m = r (phi_h xv), phi_h [n, nd];  w_i = sigma(m_i s + b_i) + eps;  y = sum_i w_i X_i
// w [tokens, n] fp32 is written for the caller's inspection. The backward adds into dX and
// overwrites dphi [n, nd], db [n] and dscale [1] (sums over tokens).
// proj [tokens, n + 1] fp32 (optional): the forward writes each token's projections phi_h xv
// (n floats) and sum of squares of xv (1 float) there, and a backward given them reads them
// instead of recomputing them: the same values, so the same bits, and the backward's first pass
// over X keeps only <dy, X_i> (1 multiply-add an element of the 6 it ran). They must come from
// the forward on the same X and phi.
// dx_into kOverwrite: dX gets what adding onto zeros gives (the same bits) without being read:
// the model's head, whose dX would otherwise be zeroed first and read back.
inline int64_t mhc_head_proj_floats(const MhcShape& shape) { return shape.tokens * (shape.n + 1); }
enum class MhcGradInto { kAdd, kOverwrite };
template <class T>
void mhc_head_forward(const T* X, const float* phi, const float* b, float scale, T* y, float* w,
                      const MhcShape& shape, core::ThreadPool* pool = nullptr,
                      float* proj = nullptr);
int64_t mhc_head_backward_workspace(const MhcShape& shape);
template <class T>
void mhc_head_backward(const T* X, const float* phi, const float* b, float scale, const T* dy,
                       T* dX, float* dphi, float* db, float* dscale, const MhcShape& shape,
                       float* workspace = nullptr, core::ThreadPool* pool = nullptr,
                       const float* proj = nullptr, MhcGradInto dx_into = MhcGradInto::kAdd);

// The eager chains (same contracts): X cast to fp32 first, a matmul, then one whole-tensor op at
// a time (squares, mean, rsqrt, slices, sigmoid, softmax, 2 iters - 1 normalisations of three
// ops each, weighted sums), each into a fresh temporary; the backward replays them in reverse
// from saved intermediates, as autograd does.
template <class T>
void mhc_pre_forward_ref(const T* X, const float* phi, const float* b, const float* scale, T* y,
                         float* pre, float* post, float* C, const MhcShape& shape,
                         core::ThreadPool* pool = nullptr);
template <class T>
void mhc_pre_backward_ref(const T* X, const float* phi, const float* b, const float* scale,
                          const T* dy, const float* dpost, const float* dC, T* dX, float* dphi,
                          float* db, float* dscale, const MhcShape& shape,
                          core::ThreadPool* pool = nullptr);
template <class T>
void mhc_post_forward_ref(const T* F, const T* X, const float* post, const float* C, T* out,
                          const MhcShape& shape, core::ThreadPool* pool = nullptr);
template <class T>
void mhc_head_forward_ref(const T* X, const float* phi, const float* b, float scale, T* y,
                          float* w, const MhcShape& shape, core::ThreadPool* pool = nullptr);
template <class T>
void mhc_head_backward_ref(const T* X, const float* phi, const float* b, float scale, const T* dy,
                           T* dX, float* dphi, float* db, float* dscale, const MhcShape& shape,
                           core::ThreadPool* pool = nullptr);
template <class T>
void mhc_post_backward_ref(const T* G, const T* F, const T* X, const float* post, const float* C,
                           T* dF, T* dX, float* dpost, float* dC, const MhcShape& shape,
                           core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
