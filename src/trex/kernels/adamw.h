// Fused AdamW: one pass over fp32 master weights, both fp32 moments and the fp32 gradient,
// writing the updated state in place and a bf16 copy of the weights for the model.
//
// The update (PyTorch torch.optim.AdamW order: decoupled decay first, then the Adam step), per
// element, with t >= 1 the step count and the per-step scalars of AdamWScalars:
//   m     = fma(b1, m, (1 - b1) g)
//   v     = fma(b2, v, (g g)(1 - b2))
//   d     = sqrt(v) / sqrt(1 - b2^t) + eps
//   theta = fma(-lr / (1 - b1^t), m / d, theta (1 - lr wd))
//   w     = bf16(theta), round to nearest even (core::to_bf16)
// The fma()s are part of the definition: the scalar, AVX2 and AVX-512 paths all compute exactly
// these roundings (every other product or sum is a single rounded op no compiler can contract),
// so the three paths and every split of the range agree bit for bit. That is what lets the swap
// optimizer update a chunk at a time and still match the in-memory optimizer byte for byte.
//
// adamw_update_ref is the eager chain: 15 whole-tensor passes, one rounded op each, the way an
// unfused framework runs AdamW (theta.mul_, m.mul_, t = g * c1, m.add_(t), ...). It rounds the two
// fma()s of m, v and theta in two steps, so it differs from the fused kernel by a few ulps of the
// terms involved (bounds stated in tests/kernels/adamw_test.cc).
//
// Shapes: theta, m, v, g are [n] fp32; w is [n] bf16 or nullptr (no copy wanted); theta_copy is
// [n] fp32 or nullptr: the updated theta written a second time, in the same pass (a model that
// computes with the fp32 master weights gets them without a second pass over 8 bytes a
// parameter); w_wide is [n] fp32 or nullptr: the bf16 weights widened back to fp32,
// core::to_float(bf16(theta)), in the same pass (a model that computes with the bf16-rounded
// weights in an fp32 array, as trex train's, gets them without a second pass over w). theta, m,
// v are read and written in place; g is only read. No array may overlap another. Elements are split over the pool in fixed chunks; there is no reduction, so results
// never depend on the thread count.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

// The hyperparameters of one parameter group (PyTorch's defaults except weight decay's, which
// is PyTorch AdamW's 0.01 too).
struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

// The per-step scalars, computed once per step and group in double and rounded to fp32 once, so
// every implementation uses the same fp32 constants.
struct AdamWScalars {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float decay;           // 1 - lr wd
  float step_size;       // lr / (1 - b1^t)
  float bias2_sqrt;      // sqrt(1 - b2^t)
  float eps;
};

// REQUIRES: step >= 1.
AdamWScalars adamw_scalars(const AdamWHyper& h, int64_t step);

// The fused kernel on the best path (core::best_isa(); TREX_ISA lowers it).
void adamw_update(const AdamWScalars& s, float* theta, float* m, float* v, const float* g,
                  core::bf16* w, int64_t n, core::ThreadPool* pool = nullptr,
                  float* theta_copy = nullptr, float* w_wide = nullptr);

// The fused kernel on a given path, for tests and benchmarks. REQUIRES: core::isa_supported(isa).
void adamw_update_isa(core::Isa isa, const AdamWScalars& s, float* theta, float* m, float* v,
                      const float* g, core::bf16* w, int64_t n, core::ThreadPool* pool = nullptr,
                      float* theta_copy = nullptr, float* w_wide = nullptr);

// The eager reference chain.
void adamw_update_ref(const AdamWScalars& s, float* theta, float* m, float* v, const float* g,
                      core::bf16* w, int64_t n, core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
