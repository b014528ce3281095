// Softmax cross-entropy over the vocabulary with the logits gradient fused into the same kernel.
//
// Shapes: logits, dlogits are [rows, vocab] row-major (rows = tokens); targets is [rows] int32
// (a negative target marks a row that is ignored: loss 0, gradient 0); loss is [rows] fp32.
//   lse = log sum_v exp(x_v),  loss = lse - x_target,
//   dlogits_v = grad_scale * (softmax(x)_v - [v == target])
// grad_scale is dL/dloss of each row (1 / number of counted rows for a mean loss). T is float or
// core::bf16 (storage); every sum and exp is fp32. The fused kernel reads a row from memory once;
// its max, sum-of-exp and gradient passes find it in L2 (a 129280-wide fp32 row is 505 KiB).
// dlogits == nullptr: forward only. dlogits may alias logits (in place, as the model wants for a
// vocabulary-sized activation): each element is read before it is written.
// Rows are split over the pool; each row is one thread's, so the results do not depend on the
// thread count. REQUIRES: targets < vocab.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

template <class T>
void cross_entropy_forward_backward(const T* logits, const int32_t* targets, float* loss,
                                    T* dlogits, int64_t rows, int64_t vocab, float grad_scale,
                                    core::ThreadPool* pool = nullptr);

// The eager chain: max, subtract, exp, sum, log, add, gather, subtract (loss); then softmax =
// exp / sum, one-hot, subtract, scale, cast (gradient): one fresh [rows, vocab] temporary per op.
template <class T>
void cross_entropy_forward_backward_ref(const T* logits, const int32_t* targets, float* loss,
                                        T* dlogits, int64_t rows, int64_t vocab,
                                        float grad_scale, core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
