// Fused AdamW: one read of theta, m, v, g and one write of theta, m, v, w (and the fp32 copies
// when asked) per element (30 bytes for about 12 flops: bandwidth-bound everywhere). Three paths
// with identical roundings (see adamw.h): scalar with std::fma, AVX2 with 8 lanes, AVX-512 with
// 16 lanes. The vector paths run their tail through the same vector code (a padded copy for AVX2,
// masked loads and stores for AVX-512), so no element ever takes a different instruction sequence
// because of where a chunk boundary falls.
#include "trex/core/trace.h"
#include "trex/kernels/adamw.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "trex/kernels/elementwise_simd512.h"

namespace trex::kernels {
namespace {

// Elements per task of the pool: large enough that scheduling is noise (256 KiB of theta).
constexpr int64_t kGrain = int64_t(1) << 16;
// Ranges of at least this many elements write their fp32 copies with streaming stores.
constexpr int64_t kStreamMin = int64_t(1) << 14;

void update_scalar(const AdamWScalars& s, float* theta, float* m, float* v, const float* g,
                   core::bf16* w, float* tc, float* ww, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float mi = std::fma(s.beta1, m[i], s.one_minus_beta1 * gi);
    float gg = gi * gi;
    float vi = std::fma(s.beta2, v[i], gg * s.one_minus_beta2);
    float d = std::sqrt(vi) / s.bias2_sqrt + s.eps;
    float q = mi / d;
    float td = theta[i] * s.decay;
    float ti = std::fma(-s.step_size, q, td);
    m[i] = mi;
    v[i] = vi;
    theta[i] = ti;
    if (w) w[i] = core::to_bf16(ti);
    if (tc) tc[i] = ti;
    if (ww) ww[i] = core::to_float(core::to_bf16(ti));
  }
}

// ---- AVX2 -------------------------------------------------------------------------------------

struct Avx2Consts {
  __m256 b1, c1, b2, c2, decay, neg_step, bias2, eps;
};

__attribute__((target("avx2,fma"))) inline __m128i round_bf16_avx2(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000));
  __m256i hi = _mm256_srli_epi32(u, 16);
  __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                  _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

__attribute__((target("avx2,fma"))) inline void step8_avx2(const Avx2Consts& k, float* theta,
                                                          float* m, float* v, const float* g,
                                                          core::bf16* w, float* tc, float* ww) {
  __m256 gv = _mm256_loadu_ps(g);
  __m256 mv = _mm256_fmadd_ps(k.b1, _mm256_loadu_ps(m), _mm256_mul_ps(k.c1, gv));
  __m256 vv = _mm256_fmadd_ps(k.b2, _mm256_loadu_ps(v), _mm256_mul_ps(_mm256_mul_ps(gv, gv), k.c2));
  __m256 d = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), k.bias2), k.eps);
  __m256 td = _mm256_mul_ps(_mm256_loadu_ps(theta), k.decay);
  __m256 tv = _mm256_fmadd_ps(k.neg_step, _mm256_div_ps(mv, d), td);
  _mm256_storeu_ps(m, mv);
  _mm256_storeu_ps(v, vv);
  _mm256_storeu_ps(theta, tv);
  if (w || ww) {
    const __m128i r = round_bf16_avx2(tv);
    if (w) _mm_storeu_si128(reinterpret_cast<__m128i*>(w), r);
    if (ww) _mm256_storeu_si256(reinterpret_cast<__m256i*>(ww),
                                _mm256_slli_epi32(_mm256_cvtepu16_epi32(r), 16));
  }
  if (tc) _mm256_storeu_ps(tc, tv);
}

__attribute__((target("avx2,fma"))) void update_avx2(const AdamWScalars& s, float* theta,
                                                     float* m, float* v, const float* g,
                                                     core::bf16* w, float* tc, float* ww,
                                                     int64_t n) {
  Avx2Consts k{_mm256_set1_ps(s.beta1),  _mm256_set1_ps(s.one_minus_beta1),
               _mm256_set1_ps(s.beta2),  _mm256_set1_ps(s.one_minus_beta2),
               _mm256_set1_ps(s.decay),  _mm256_set1_ps(-s.step_size),
               _mm256_set1_ps(s.bias2_sqrt), _mm256_set1_ps(s.eps)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    step8_avx2(k, theta + i, m + i, v + i, g + i, w ? w + i : nullptr, tc ? tc + i : nullptr,
               ww ? ww + i : nullptr);
  int64_t r = n - i;
  if (r == 0) return;
  // The tail through the same vector code on a zero-padded copy (padding lanes are discarded;
  // zeros keep them finite so no floating-point exception flag depends on the padding).
  alignas(32) float bt[8] = {}, bm[8] = {}, bv[8] = {}, bg[8] = {};
  alignas(16) core::bf16 bw[8];
  alignas(32) float bww[8];
  size_t bytes = size_t(r) * sizeof(float);
  std::memcpy(bt, theta + i, bytes);
  std::memcpy(bm, m + i, bytes);
  std::memcpy(bv, v + i, bytes);
  std::memcpy(bg, g + i, bytes);
  step8_avx2(k, bt, bm, bv, bg, w ? bw : nullptr, nullptr, ww ? bww : nullptr);
  std::memcpy(theta + i, bt, bytes);
  std::memcpy(m + i, bm, bytes);
  std::memcpy(v + i, bv, bytes);
  if (w) std::memcpy(w + i, bw, size_t(r) * sizeof(core::bf16));
  if (tc) std::memcpy(tc + i, bt, bytes);
  if (ww) std::memcpy(ww + i, bww, bytes);
}

// ---- AVX-512 ----------------------------------------------------------------------------------

// The target of elementwise_simd512.h's helpers (round16 is inlined only into a caller with the
// same target).
#define TREX_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))

// The zero-masked forms of sqrt, widening and shift with every lane selected: the same
// instructions, without the unmasked forms' undefined source vector that GCC 12 flags as
// maybe-uninitialized. The bf16 rounding is elementwise_simd512.h's round16.
constexpr __mmask16 kAll = 0xffff;

struct Avx512Consts {
  __m512 b1, c1, b2, c2, decay, neg_step, bias2, eps;
};

// One vector of 16 lanes; `mask` selects the lanes that exist (all of them except in the tail).
TREX_AVX512 inline void step16_avx512(const Avx512Consts& k, __mmask16 mask, float* theta,
                                      float* m, float* v, const float* g, core::bf16* w,
                                      float* tc, float* ww, bool tc_stream, bool ww_stream) {
  __m512 gv = _mm512_maskz_loadu_ps(mask, g);
  __m512 mv = _mm512_fmadd_ps(k.b1, _mm512_maskz_loadu_ps(mask, m), _mm512_mul_ps(k.c1, gv));
  __m512 vv = _mm512_fmadd_ps(k.b2, _mm512_maskz_loadu_ps(mask, v),
                              _mm512_mul_ps(_mm512_mul_ps(gv, gv), k.c2));
  __m512 d = _mm512_add_ps(_mm512_div_ps(_mm512_maskz_sqrt_ps(kAll, vv), k.bias2), k.eps);
  __m512 td = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, theta), k.decay);
  __m512 tv = _mm512_fmadd_ps(k.neg_step, _mm512_div_ps(mv, d), td);
  _mm512_mask_storeu_ps(m, mask, mv);
  _mm512_mask_storeu_ps(v, mask, vv);
  _mm512_mask_storeu_ps(theta, mask, tv);
  if (w || ww) {
    const __m256i r = simd::round16(tv);
    if (w) _mm256_mask_storeu_epi16(w, mask, r);
    if (ww) {
      const __m512 wide = _mm512_castsi512_ps(
          _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, r), 16));
      if (ww_stream)
        _mm512_stream_ps(ww, wide);
      else
        _mm512_mask_storeu_ps(ww, mask, wide);
    }
  }
  if (tc) {
    if (tc_stream)
      _mm512_stream_ps(tc, tv);
    else
      _mm512_mask_storeu_ps(tc, mask, tv);
  }
}

TREX_AVX512 void update_avx512(const AdamWScalars& s, float* theta, float* m, float* v,
                               const float* g, core::bf16* w, float* tc, float* ww, int64_t n) {
  Avx512Consts k{_mm512_set1_ps(s.beta1),  _mm512_set1_ps(s.one_minus_beta1),
                 _mm512_set1_ps(s.beta2),  _mm512_set1_ps(s.one_minus_beta2),
                 _mm512_set1_ps(s.decay),  _mm512_set1_ps(-s.step_size),
                 _mm512_set1_ps(s.bias2_sqrt), _mm512_set1_ps(s.eps)};
  // The fp32 copies go to a model's parameters, read again only at the next step's forward, far
  // beyond the caches: streaming stores (no read of each line before it is written), as the
  // separate widening pass had. They need 64-byte aligned full vectors, and a parameter group
  // starts wherever the previous one ended: a masked head of up to 15 lanes (the same vector
  // code, so the same bits) brings the copy to a 64-byte boundary first (and with it the state
  // and gradient, where those arrays are aligned as the model's are and indexed alike). Small
  // ranges (norms, the swap optimizer's chunks) store plainly.
  float* const out = ww ? ww : tc;
  int64_t i = 0;
  bool tc_stream = false, ww_stream = false;
  if (out && n >= kStreamMin && reinterpret_cast<uintptr_t>(out) % sizeof(float) == 0) {
    const int64_t head = int64_t((64 - reinterpret_cast<uintptr_t>(out) % 64) % 64 / sizeof(float));
    if (head > 0) {
      step16_avx512(k, __mmask16((1u << head) - 1u), theta, m, v, g, w, tc, ww, false, false);
      i = head;
    }
    tc_stream = tc && reinterpret_cast<uintptr_t>(tc + i) % 64 == 0;
    ww_stream = ww && reinterpret_cast<uintptr_t>(ww + i) % 64 == 0;
  }
  for (; i + 16 <= n; i += 16)
    step16_avx512(k, kAll, theta + i, m + i, v + i, g + i, w ? w + i : nullptr,
                  tc ? tc + i : nullptr, ww ? ww + i : nullptr, tc_stream, ww_stream);
  if (i < n) {
    __mmask16 tail = __mmask16((1u << (n - i)) - 1u);
    step16_avx512(k, tail, theta + i, m + i, v + i, g + i, w ? w + i : nullptr,
                  tc ? tc + i : nullptr, ww ? ww + i : nullptr, false, false);
  }
  if (tc_stream || ww_stream) _mm_sfence();  // streamed lines visible before the job ends
}

}  // namespace

AdamWScalars adamw_scalars(const AdamWHyper& h, int64_t step) {
  double t = double(step);
  double bias1 = 1.0 - std::pow(double(h.beta1), t);
  double bias2 = 1.0 - std::pow(double(h.beta2), t);
  AdamWScalars s;
  s.beta1 = h.beta1;
  s.one_minus_beta1 = float(1.0 - double(h.beta1));
  s.beta2 = h.beta2;
  s.one_minus_beta2 = float(1.0 - double(h.beta2));
  s.decay = float(1.0 - double(h.lr) * double(h.weight_decay));
  s.step_size = float(double(h.lr) / bias1);
  s.bias2_sqrt = float(std::sqrt(bias2));
  s.eps = h.eps;
  return s;
}

void adamw_update_isa(core::Isa isa, const AdamWScalars& s, float* theta, float* m, float* v,
                      const float* g, core::bf16* w, int64_t n, core::ThreadPool* pool,
                      float* theta_copy, float* w_wide) {
  if (n <= 0) return;
  // theta, m, v read and written, g read, the bf16 copy and the fp32 copies written.
  core::trace_count(0, double(n) * (7 * 4 + (w ? 2 : 0) + (theta_copy ? 4 : 0) + (w_wide ? 4 : 0)));
  auto body = [&](int64_t lo, int64_t hi) {
    core::bf16* wl = w ? w + lo : nullptr;
    float* tcl = theta_copy ? theta_copy + lo : nullptr;
    float* wwl = w_wide ? w_wide + lo : nullptr;
    switch (isa) {
      case core::Isa::kAvx512:
        update_avx512(s, theta + lo, m + lo, v + lo, g + lo, wl, tcl, wwl, hi - lo);
        break;
      case core::Isa::kAvx2:
        update_avx2(s, theta + lo, m + lo, v + lo, g + lo, wl, tcl, wwl, hi - lo);
        break;
      case core::Isa::kScalar:
        update_scalar(s, theta + lo, m + lo, v + lo, g + lo, wl, tcl, wwl, hi - lo);
        break;
    }
  };
  if (n <= kGrain) {
    body(0, n);  // one task: skip the pool's hand-off (the swap optimizer's small chunks)
    return;
  }
  core::pool_or_default(pool).parallel_for(0, n, kGrain, body);
}

void adamw_update(const AdamWScalars& s, float* theta, float* m, float* v, const float* g,
                  core::bf16* w, int64_t n, core::ThreadPool* pool, float* theta_copy,
                  float* w_wide) {
  adamw_update_isa(core::best_isa(), s, theta, m, v, g, w, n, pool, theta_copy, w_wide);
}

}  // namespace trex::kernels
