// Fused softmax cross-entropy, per row: a max pass, a sum-of-exp pass and a gradient pass. The
// row (at most 505 KiB in fp32 for V = 129280) stays in L2 after the first pass, so memory sees
// one read and one write of the logits instead of the ~12 whole-tensor passes of the eager chain.
// (An online max-and-sum in one pass would cost a third exp per element, and exp, not memory, is
// what limits this kernel on one core.)
#include "trex/kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trex/kernels/elementwise_simd.h"

namespace trex::kernels {
namespace {

using simd::ld;
using simd::st;

// log sum exp of one row: a max pass, then a sum-of-exp pass that finds the row in L2.
template <class T>
float row_lse(const T* x, int64_t vocab) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity(), s = 0.f;
#ifdef TREX_ELEM_AVX2
  if (vocab >= 8) {
    __m256 vm = simd::load8(x);
    for (i = 8; i + 8 <= vocab; i += 8) vm = _mm256_max_ps(vm, simd::load8(x + i));
    alignas(32) float lm[8];
    _mm256_store_ps(lm, vm);
    for (float v : lm) m = std::max(m, v);
    for (int64_t j = i; j < vocab; ++j) m = std::max(m, ld(x + j));
    __m256 vmax = _mm256_set1_ps(m), vs = _mm256_setzero_ps();
    for (i = 0; i + 8 <= vocab; i += 8)
      vs = _mm256_add_ps(vs, simd::exp8(_mm256_sub_ps(simd::load8(x + i), vmax)));
    s = simd::hsum(vs);
    for (; i < vocab; ++i) s += std::exp(ld(x + i) - m);
    return m + std::log(s);
  }
#endif
  for (int64_t j = 0; j < vocab; ++j) m = std::max(m, ld(x + j));
  for (int64_t j = 0; j < vocab; ++j) s += std::exp(ld(x + j) - m);
  return m + std::log(s);
}

// dx = scale exp(x - lse). For scale > 0 the scale is folded into the exponent,
// exp(x - (lse - ln scale)): multiplying a tiny probability by the scale afterwards would make
// subnormal numbers, which cost a microcode assist each (20x slower on heavy-tailed logits).
template <class T>
void row_grad(const T* x, T* dx, int64_t vocab, float lse, float scale) {
  const bool fold = scale > 0.f;
  const float shift = fold ? lse - std::log(scale) : lse, mul = fold ? 1.f : scale;
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vl = _mm256_set1_ps(shift), vsc = _mm256_set1_ps(mul);
  for (; i + 8 <= vocab; i += 8)
    simd::store8(dx + i, _mm256_mul_ps(simd::exp8(_mm256_sub_ps(simd::load8(x + i), vl)), vsc));
#endif
  for (; i < vocab; ++i) st(dx + i, std::exp(ld(x + i) - shift) * mul);
}

}  // namespace

template <class T>
void cross_entropy_forward_backward(const T* logits, const int32_t* targets, float* loss,
                                    T* dlogits, int64_t rows, int64_t vocab, float grad_scale,
                                    core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(vocab, 1));
  tp.parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* x = logits + r * vocab;
      int32_t tgt = targets[r];
      if (tgt < 0) {
        loss[r] = 0.f;
        if (dlogits)
          for (int64_t v = 0; v < vocab; ++v) st(dlogits + r * vocab + v, 0.f);
        continue;
      }
      float lse = row_lse(x, vocab);
      float xt = ld(x + tgt);  // read before an in-place gradient overwrites it
      loss[r] = lse - xt;
      if (!dlogits) continue;
      T* dx = dlogits + r * vocab;
      row_grad(x, dx, vocab, lse, grad_scale);
      st(dx + tgt, (std::exp(xt - lse) - 1.f) * grad_scale);
    }
  });
}

template void cross_entropy_forward_backward<float>(const float*, const int32_t*, float*, float*,
                                                    int64_t, int64_t, float, core::ThreadPool*);
template void cross_entropy_forward_backward<core::bf16>(const core::bf16*, const int32_t*, float*,
                                                         core::bf16*, int64_t, int64_t, float,
                                                         core::ThreadPool*);

}  // namespace trex::kernels
