// RMSNorm over the last dimension, weight-free (per head) and weighted, forward and backward.
//
// Shapes: x, y, dy, dx are [rows, dim] row-major (contiguous); w, dw are [dim] fp32 (master
// weights stay fp32 even when activations are bf16). For the per-head norm, rows = tokens * heads
// and dim = head_dim: the same kernel, since each head is a contiguous row of its own.
//   r = (mean(x^2) + eps)^(-1/2),  xh = r x,  y = w * xh        (w = 1 when weight-free)
//   gw = w * dy,  dx = r (gw - xh mean(gw * xh)),  dw = sum over rows of dy * xh
// T is float or core::bf16: storage only, every sum and product is fp32.
//
// Two implementations with one signature each:
//  - *_ref: the chain of whole-tensor operations an eager framework runs (square, mean, add eps,
//    rsqrt, multiply, ...), each materialising a fresh temporary: the baseline and test oracle.
//  - the fused kernels: one read of each input and one write of each output per row, rows split
//    over the thread pool, SIMD (AVX2/FMA) with a scalar tail. The backward recomputes r from x
//    in the same pass rather than saving it, since x is read anyway.
// Outputs never alias inputs. dw is overwritten (not accumulated) and is reduced over fixed
// row chunks in a fixed tree, so it is bit-identical for any thread count.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

inline constexpr float kRmsNormEps = 1e-6f;

// w == nullptr: weight-free. pool == nullptr: core::default_thread_pool().
template <class T>
void rmsnorm_forward(const T* x, const float* w, T* y, int64_t rows, int64_t dim, float eps,
                     core::ThreadPool* pool = nullptr);
// w == nullptr: weight-free (dw is ignored). Otherwise dw ([dim]) is written unless null.
template <class T>
void rmsnorm_backward(const T* x, const float* w, const T* dy, T* dx, float* dw, int64_t rows,
                      int64_t dim, float eps, core::ThreadPool* pool = nullptr);

template <class T>
void rmsnorm_forward_ref(const T* x, const float* w, T* y, int64_t rows, int64_t dim, float eps,
                         core::ThreadPool* pool = nullptr);
template <class T>
void rmsnorm_backward_ref(const T* x, const float* w, const T* dy, T* dx, float* dw, int64_t rows,
                          int64_t dim, float eps, core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
