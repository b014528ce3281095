// Limited SwiGLU (DeepSeek-V4 experts), forward and closed-form backward, elementwise per row.
//
// Shapes: g, u, out, dh, dg, du are [rows, cols] row-major (rows = tokens, cols = the expert's
// intermediate size); w and dw are [rows] fp32 routing weights (nullptr for the shared expert).
//   gc = min(g, L),  uc = clamp(u, -L, L),  a = silu(gc) uc,  out = w a   (w = 1 when null)
//   dw = <dh, a> per row,  da = w dh,
//   dg = da uc silu'(gc) [g <= L],  du = da silu(gc) [-L <= u <= L],
//   silu(z) = z sigma(z),  silu'(z) = sigma(z) (1 + z (1 - sigma(z)))
// The gradient passes at equality (as torch.clamp does). T is float or core::bf16 (storage);
// arithmetic is fp32. The fused kernels read g, u (and dh) once and write every output once, with
// no saved masks or activations; *_ref is the eager op-by-op chain used as baseline and oracle.
// Outputs never alias inputs; rows are split over the pool and each row's sum (dw) is computed by
// one thread in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

inline constexpr float kSwigluLimit = 10.f;  // swiglu_limit of every DeepSeek-V4 config

template <class T>
void swiglu_forward(const T* g, const T* u, const float* w, T* out, int64_t rows, int64_t cols,
                    float limit, core::ThreadPool* pool = nullptr);
// dw may be nullptr (not wanted) and must be when w is.
template <class T>
void swiglu_backward(const T* g, const T* u, const float* w, const T* dh, T* dg, T* du, float* dw,
                     int64_t rows, int64_t cols, float limit, core::ThreadPool* pool = nullptr);

template <class T>
void swiglu_forward_ref(const T* g, const T* u, const float* w, T* out, int64_t rows,
                        int64_t cols, float limit, core::ThreadPool* pool = nullptr);
template <class T>
void swiglu_backward_ref(const T* g, const T* u, const float* w, const T* dh, T* dg, T* du,
                         float* dw, int64_t rows, int64_t cols, float limit,
                         core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
