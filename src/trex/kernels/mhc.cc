// Fused mHC kernels. Pre-projection, per token: one pass over the bf16 (or fp32) row computes the
// R projections and the sum of squares together (rows of phi in groups of 8, x widened in
// registers; two tokens at a time, so that each load of phi serves both), the gates and Sinkhorn run on R scalars, and a second pass forms y. The backward
// has two stages: per token (parallel over tokens) the small gradients dp, db, dscale and the
// RMS coefficient; then per block of nd columns (parallel over columns, each block owned by one
// thread for all tokens) dX and dphi as two GEMMs per chunk of tokens, so the sum over tokens
// needs no per-thread copies of dphi and runs at GEMM speed. (Computing the projections as one
// GEMM over all tokens instead of the per-token matvec was 10-15% faster here, but its different
// order of summation moved a v4-tiny training run off the PyTorch reference's trajectory within
// 10 AdamW steps (a selection flip), so the matvec and its bits stay.)
#include "trex/kernels/mhc.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/mhc_projection_backward.h"
#include "trex/kernels/mhc_sinkhorn.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {
namespace {

using simd::ld;
using simd::st;

constexpr int kMaxRows = (kMhcMaxStreams + 2) * kMhcMaxStreams;

// A per-thread scratch that only grows, so steady-state calls neither allocate nor page-fault.
float* scratch(int slot, size_t floats) {
  thread_local std::vector<float> bufs[2];
  std::vector<float>& b = bufs[slot];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

// p[r] = <phi_r, x> for r < R and the sum of squares of x (length nd).
template <class T>
void project(const T* x, const float* phi, int64_t nd, int R, float* p, float* sumsq) {
  float ss = 0.f;
  for (int g0 = 0; g0 < R; g0 += 8) {
    const int rows = std::min(8, R - g0);
    const float* pr[8];
    for (int r = 0; r < 8; ++r) pr[r] = phi + int64_t(g0 + std::min(r, rows - 1)) * nd;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
#ifdef TREX_ELEM_AVX2
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    __m256 sq = _mm256_setzero_ps();
    for (; i + 8 <= nd; i += 8) {
      __m256 xv = simd::load8(x + i);
      if (g0 == 0) sq = _mm256_fmadd_ps(xv, xv, sq);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[0] + i), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[1] + i), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[2] + i), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[3] + i), xv, a3);
      a4 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[4] + i), xv, a4);
      a5 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[5] + i), xv, a5);
      a6 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[6] + i), xv, a6);
      a7 = _mm256_fmadd_ps(_mm256_loadu_ps(pr[7] + i), xv, a7);
    }
    acc[0] = simd::hsum(a0), acc[1] = simd::hsum(a1), acc[2] = simd::hsum(a2);
    acc[3] = simd::hsum(a3), acc[4] = simd::hsum(a4), acc[5] = simd::hsum(a5);
    acc[6] = simd::hsum(a6), acc[7] = simd::hsum(a7);
    if (g0 == 0) ss = simd::hsum(sq);
#endif
    for (; i < nd; ++i) {
      float xv = ld(x + i);
      if (g0 == 0) ss += xv * xv;
      for (int r = 0; r < 8; ++r) acc[r] += pr[r][i] * xv;
    }
    for (int r = 0; r < rows; ++r) p[g0 + r] = acc[r];
  }
  *sumsq = ss;
}

// project() for four tokens at once, rows of phi six at a time: 24 accumulators, each phi load
// serving four tokens (the earlier two-token form, 8 rows x 2 tokens, streamed phi from L2 at
// about 36 bytes a cycle, this about 21; mhc.pre_bwd's projections 25% faster). Each token's sums run in project()'s order (same bits). nd % 8 == 0.
// Sq: the first group of rows, which also sums the squares (a compile-time choice: tested
// inside the loop, it made GCC keep the accumulators in memory).
// kTok tokens and kRows rows per call (project_rows<4, 6> for the pre-projection's R = 24;
// project_head for the head's R = n).
#ifdef TREX_ELEM_AVX2
// 8 bf16 widened by one zero-masked word permute (each value to the top half of its lane, as
// simd::load8's zero-extension and shift, in one instruction instead of two), where the build
// has AVX512BW/VL; fp32 is a plain load.
inline __m256 load8_widen(const float* p, __m256i) { return _mm256_loadu_ps(p); }
#if defined(__AVX512BW__) && defined(__AVX512VL__)
inline __m256i widen8_index() { return _mm256_set_epi16(7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0); }
inline __m256 load8_widen(const core::bf16* p, __m256i idx) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_maskz_permutexvar_epi16(0xaaaa, idx, _mm256_castsi128_si256(h)));
}
#else
inline __m256i widen8_index() { return _mm256_setzero_si256(); }
inline __m256 load8_widen(const core::bf16* p, __m256i) { return simd::load8(p); }
#endif

template <int kTok, int kRows, bool Sq, class T>
void project_rows(const T* const* x, const float* phi, int64_t nd, int R, int g0,
                  float* const* p, float* sumsq) {
  const int rows = std::min(kRows, R - g0);
  const float* pr[kRows];
  for (int r = 0; r < kRows; ++r) pr[r] = phi + int64_t(g0 + std::min(r, rows - 1)) * nd;
  __m256 a[kTok][kRows], sq[kTok];
  for (int k = 0; k < kTok; ++k) {
    sq[k] = _mm256_setzero_ps();
    for (int r = 0; r < kRows; ++r) a[k][r] = _mm256_setzero_ps();
  }
  const __m256i widx = widen8_index();
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  for (int64_t i = 0; i < nd; i += 8) {
    // The next kTok tokens' rows (the callers project consecutive tokens), a line of each per
    // line of these, into L2 during the first group of rows: 4 streams alone left the
    // projections waiting on memory at half their in-cache rate. (A prefetch past the
    // tensor's end never faults.)
    if constexpr (Sq)
      if (i % kLine == 0)
        for (int k = 0; k < kTok; ++k)
          _mm_prefetch(reinterpret_cast<const char*>(x[k] + kTok * nd + i), _MM_HINT_T1);
    __m256 xv[kTok];
#pragma GCC unroll 4
    for (int k = 0; k < kTok; ++k) {
      xv[k] = load8_widen(x[k] + i, widx);
      if constexpr (Sq) sq[k] = _mm256_fmadd_ps(xv[k], xv[k], sq[k]);
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      __m256 w = _mm256_loadu_ps(pr[r] + i);
      // In a register: else GCC folds the load into each token's FMA (kTok loads of phi where
      // one serves; the loads, not the FMAs, then set the pace).
      asm("" : "+x"(w));
#pragma GCC unroll 4
      for (int k = 0; k < kTok; ++k) a[k][r] = _mm256_fmadd_ps(w, xv[k], a[k][r]);
    }
  }
  // Every accumulator by constant index (a run-time bound here put the array in memory).
  float out[kTok][kRows];
  for (int k = 0; k < kTok; ++k) {
    for (int r = 0; r < kRows; ++r) out[k][r] = simd::hsum(a[k][r]);
    if constexpr (Sq) sumsq[k] = simd::hsum(sq[k]);
  }
  for (int k = 0; k < kTok; ++k) std::copy(out[k], out[k] + rows, p[k] + g0);
}
#endif

template <class T>
void project4(const T* const* x, const float* phi, int64_t nd, int R, float* const* p,
              float* sumsq) {
#ifdef TREX_ELEM_AVX2
  project_rows<4, 6, true>(x, phi, nd, R, 0, p, sumsq);
  for (int g0 = 6; g0 < R; g0 += 6) project_rows<4, 6, false>(x, phi, nd, R, g0, p, sumsq);
#else
  for (int k = 0; k < 4; ++k) project(x[k], phi, nd, R, p[k], &sumsq[k]);
#endif
}

// The final head's projections (R = n rows, n <= 8) of kHeadTokens tokens at once, rows four at
// a time: each load of phi serves every token. project() alone ran 8 row accumulators for the
// head's 4 rows (rows 4-7 repeating row 3) and loaded phi (64 KiB for nd = 4096, from L2) 8
// times per 8 elements of one token; here 4 loads serve 4 tokens, and the 4 tokens' rows are 4
// streams in flight instead of one (perf: the single stream's X loads were where the cycles
// went). Every token's sums are project()'s chains (same bits). nd % 8 == 0. 4 tokens need 16
// accumulators, 4 squares and 4 x: 25 vectors, which only AVX-512VL's 32 registers hold; a build
// for AVX2 alone (16 ymm) takes 2 tokens (13 vectors).
#ifdef __AVX512VL__
constexpr int kHeadTokens = 4;
#else
constexpr int kHeadTokens = 2;
#endif

#ifdef TREX_ELEM_AVX2
// project_rows<4, 4> on AVX-512 (row_isa()): two tokens per 16-lane register, token 2q in the
// low 8 lanes and 2q + 1 in the high 8, each of phi's 8 values loaded once for both halves. Every
// lane runs the chain it runs in the 8-lane form (same FMAs in the same order), and each half is
// summed by the same hsum: the same bits, with half the FMA instructions (10 a step of 8 elements
// of 4 tokens instead of 20; this CPU retires two 16-lane FMAs a cycle, as it does 8-lane ones).
template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) inline __m512 load8_pair(
    const T* a, const T* b) {
  // The zero-masked forms with every lane selected (simd::kAll16): GCC 12 flags the plain forms'
  // _mm512_undefined_*() operand as uninitialized (see adamw.cc).
  if constexpr (std::is_same_v<T, core::bf16>) {
    const __m256i h = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(simd::kAll16, _mm512_maskz_cvtepu16_epi32(simd::kAll16, h), 16));
  } else {
    return _mm512_maskz_insertf32x8(simd::kAll16, _mm512_maskz_broadcast_f32x8(simd::kAll16, _mm256_loadu_ps(a)),
                                    _mm256_loadu_ps(b), 1);
  }
}

template <bool Sq, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void project_rows512_pairs(
    const T* const* x, const float* phi, int64_t nd, int R, int g0, float* const* p,
    float* sumsq) {
  constexpr int kTok = 4, kRows = 4, kPairs = 2;
  const int rows = std::min(kRows, R - g0);
  const float* pr[kRows];
  for (int r = 0; r < kRows; ++r) pr[r] = phi + int64_t(g0 + std::min(r, rows - 1)) * nd;
  __m512 a[kPairs][kRows], sq[kPairs];
  for (int q = 0; q < kPairs; ++q) {
    sq[q] = _mm512_setzero_ps();
    for (int r = 0; r < kRows; ++r) a[q][r] = _mm512_setzero_ps();
  }
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  for (int64_t i = 0; i < nd; i += 8) {
    // The rows of the 4 tokens after the next 4, a line of each per line of these, into L2 (one
    // group ahead, as project_rows, ran 1.31-1.39x slower in the head forward: quiet lane,
    // loaded; three groups ahead was no better than one, four in between).
    if constexpr (Sq)
      if (i % kLine == 0)
        for (int k = 0; k < kTok; ++k)
          _mm_prefetch(reinterpret_cast<const char*>(x[k] + 2 * kTok * nd + i), _MM_HINT_T1);
    __m512 xv[kPairs];
#pragma GCC unroll 2
    for (int q = 0; q < kPairs; ++q) {
      xv[q] = load8_pair(x[2 * q] + i, x[2 * q + 1] + i);
      if constexpr (Sq) sq[q] = _mm512_fmadd_ps(xv[q], xv[q], sq[q]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      __m512 w = _mm512_maskz_broadcast_f32x8(simd::kAll16, _mm256_loadu_ps(pr[r] + i));
      asm("" : "+v"(w));  // one load for both pairs (as project_rows)
#pragma GCC unroll 2
      for (int q = 0; q < kPairs; ++q) a[q][r] = _mm512_fmadd_ps(w, xv[q], a[q][r]);
    }
  }
  float out[kTok][kRows];
  for (int q = 0; q < kPairs; ++q) {
    for (int r = 0; r < kRows; ++r) {
      out[2 * q][r] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, a[q][r], 0));
      out[2 * q + 1][r] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, a[q][r], 1));
    }
    if constexpr (Sq) {
      sumsq[2 * q] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, sq[q], 0));
      sumsq[2 * q + 1] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, sq[q], 1));
    }
  }
  for (int k = 0; k < kTok; ++k) std::copy(out[k], out[k] + rows, p[k] + g0);
}
#endif

template <class T>
void project_head(const T* const* x, const float* phi, int64_t nd, int R, float* const* p,
                  float* sumsq) {
#ifdef TREX_ELEM_AVX2
  if constexpr (kHeadTokens == 4) {
    if (row_isa() == core::Isa::kAvx512) {
      project_rows512_pairs<true>(x, phi, nd, R, 0, p, sumsq);
      for (int g0 = 4; g0 < R; g0 += 4) project_rows512_pairs<false>(x, phi, nd, R, g0, p, sumsq);
      return;
    }
  }
  project_rows<kHeadTokens, 4, true>(x, phi, nd, R, 0, p, sumsq);
  for (int g0 = 4; g0 < R; g0 += 4) project_rows<kHeadTokens, 4, false>(x, phi, nd, R, g0, p, sumsq);
#else
  for (int k = 0; k < kHeadTokens; ++k) project(x[k], phi, nd, R, p[k], &sumsq[k]);
#endif
}

// <g, x_i> of one row g against n rows x + i d at once: one 8-lane FMA chain per row, the n
// chains interleaved instead of one waiting on the latency of the last, g loaded once.
template <class T>
void dots(const T* g, const T* x, int n, int64_t d, float* out) {
  int64_t e = 0;
#ifdef TREX_ELEM_AVX2
  __m256 acc[kMhcMaxStreams];
  for (int i = 0; i < n; ++i) acc[i] = _mm256_setzero_ps();
  for (; e + 8 <= d; e += 8) {
    const __m256 gv = simd::load8(g + e);
    for (int i = 0; i < n; ++i) acc[i] = _mm256_fmadd_ps(gv, simd::load8(x + i * d + e), acc[i]);
  }
  for (int i = 0; i < n; ++i) out[i] = simd::hsum(acc[i]);
#else
  for (int i = 0; i < n; ++i) out[i] = 0.f;
#endif
  for (int i = 0; i < n; ++i)
    for (int64_t f = e; f < d; ++f) out[i] += ld(g + f) * ld(x + i * d + f);
}

// y = sum_i w_i X_i over d.
template <class T>
void weighted_streams(const T* X, const float* w, int n, int64_t d, T* y) {
  int64_t e = 0;
#ifdef TREX_ELEM_AVX2
  for (; e + 8 <= d; e += 8) {
    __m256 acc = _mm256_mul_ps(_mm256_set1_ps(w[0]), simd::load8(X + e));
    for (int i = 1; i < n; ++i) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), simd::load8(X + i * d + e), acc);
    simd::store8(y + e, acc);
  }
#endif
  for (; e < d; ++e) {
    float acc = w[0] * ld(X + e);
    for (int i = 1; i < n; ++i) acc = std::fma(w[i], ld(X + i * d + e), acc);
    st(y + e, acc);
  }
}

// weighted_streams on 16 lanes (row_isa() AVX-512): y[e] is the same FMA chain as there, so the
// same bits; bf16 y rounds by vcvtneps2bf16 where the CPU has AVX512_BF16 (Cvt; same bits,
// round16_cvt) and NT streams y. The 8-lane bf16 store rounded in about ten integer instructions
// per 8 values: the head forward's y pass cost nearly as many instructions as its projections.
template <bool NT, bool Cvt, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void weighted_streams512(
    const T* X, const float* w, int n, int64_t d, T* y) {
  __m512 wv[kMhcMaxStreams];
  for (int i = 0; i < n; ++i) wv[i] = _mm512_set1_ps(w[i]);
  int64_t e = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    // A line of each stream per step (simd::load32 / store32: one permute per 16 values, one
    // rounding per 32): the same values and chains as the 16-lane steps, so the same bits.
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    for (; e + 32 <= d; e += 32) {
      __m512 x0, x1;
      simd::load32(X + e, lo_idx, hi_idx, &x0, &x1);
      __m512 a0 = _mm512_mul_ps(wv[0], x0), a1 = _mm512_mul_ps(wv[0], x1);
      for (int i = 1; i < n; ++i) {
        simd::load32(X + i * d + e, lo_idx, hi_idx, &x0, &x1);
        a0 = _mm512_fmadd_ps(wv[i], x0, a0);
        a1 = _mm512_fmadd_ps(wv[i], x1, a1);
      }
      simd::store32<NT>(y + e, a0, a1);
    }
  }
  for (; e < d; e += 16) {
    const __mmask16 m = simd::lanes16(e, d);
    __m512 acc = _mm512_mul_ps(wv[0], simd::load16(X + e, m));
    for (int i = 1; i < n; ++i) acc = _mm512_fmadd_ps(wv[i], simd::load16(X + i * d + e, m), acc);
    if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(y + e, acc, m);
    else simd::put16<NT>(y + e, acc, m);
  }
}

// The gates of W tokens [t, t + W) side by side, lane l = token t + l (mhc_sinkhorn.h's layout):
// their projections (four tokens at a time where nd allows), RMS factors, m = r p, and the gates
// and Sinkhorn mix. Every token's values are the one-token bits, so a batch equals token-by-token
// calls (decoding). The scratch lives as long as a chunk of the pool.
template <int W>
struct LaneGates {
  std::vector<float> trace;
  float p[kMaxRows * W], r[W], m[kMaxRows * W], sig_a[kMhcMaxStreams * W], sig_c[kMhcMaxStreams * W];
  float pre[kMhcMaxStreams * W], post[kMhcMaxStreams * W], C[kMhcMaxStreams * kMhcMaxStreams * W];

  explicit LaneGates(const MhcShape& sh) : trace(size_t(mhc_detail::trace_floats(sh) * W)) {}

  template <class T>
  void forward(const T* X, const float* phi, const float* b, const float* scale,
               const MhcShape& sh, int64_t t) {
    const int R = int(sh.rows());
    const int64_t nd = sh.n * sh.d;
    float pl[W][kMaxRows], ss[W];
    int l = 0;
    if (nd % 8 == 0)
      for (; l + 4 <= W; l += 4) {
        const T* xs[4];
        float* ps[4];
        for (int k = 0; k < 4; ++k) xs[k] = X + (t + l + k) * nd, ps[k] = pl[l + k];
        project4(xs, phi, nd, R, ps, ss + l);
      }
    for (; l < W; ++l) project(X + (t + l) * nd, phi, nd, R, pl[l], &ss[l]);
    for (l = 0; l < W; ++l) {
      r[l] = 1.f / std::sqrt(ss[l] / float(nd) + sh.rms_eps);
      for (int q = 0; q < R; ++q) {
        p[q * W + l] = pl[l][q];
        m[q * W + l] = r[l] * pl[l][q];
      }
    }
    mhc_detail::mix_forward<W>(m, b, scale, sh, pre, post, C, sig_a, sig_c, trace.data());
  }
};

// The forward of W tokens from t: gates, then y = sum_i pre_i X_i per token.
template <int W, class T>
void pre_forward_lanes(LaneGates<W>& g, const T* X, const float* phi, const float* b,
                       const float* scale, T* y, float* pre, float* post, float* C,
                       const MhcShape& sh, int64_t t) {
  const int n = sh.n, nn = n * n;
  const int64_t nd = n * sh.d;
  g.forward(X, phi, b, scale, sh, t);
  for (int l = 0; l < W; ++l) {
    const int64_t tl = t + l;
    for (int i = 0; i < n; ++i) {
      pre[tl * n + i] = g.pre[i * W + l];
      post[tl * n + i] = g.post[i * W + l];
    }
    for (int q = 0; q < nn; ++q) C[tl * nn + q] = g.C[q * W + l];
    weighted_streams(X + tl * nd, pre + tl * n, n, sh.d, y + tl * sh.d);
  }
}

}  // namespace

template <class T>
void mhc_pre_forward(const T* X, const float* phi, const float* b, const float* scale, T* y,
                     float* pre, float* post, float* C, const MhcShape& sh,
                     core::ThreadPool* pool) {
  if (sh.tokens <= 0 || sh.d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  constexpr int kW = mhc_detail::kMixLanes;
  const int64_t grain = tuned_or("mhc.pre_fwd", {sh.tokens, sh.n, sh.d}, "block_tokens", builtin::kMhcPreBlockTokens);
  tp.parallel_for(0, sh.tokens, grain, [&](int64_t t0, int64_t t1) {
    LaneGates<kW> wide(sh);
    LaneGates<1> one(sh);
    int64_t t = t0;
    for (; t + kW <= t1; t += kW)
      pre_forward_lanes(wide, X, phi, b, scale, y, pre, post, C, sh, t);
    for (; t < t1; ++t) pre_forward_lanes(one, X, phi, b, scale, y, pre, post, C, sh, t);
  });
}

namespace {

// Per-token record of stage 1 of the backward.
struct PreBackLayout {
  int64_t R, n, per_token;
  int64_t dp() const { return 0; }
  int64_t db() const { return R; }
  int64_t ds() const { return 2 * R; }
  int64_t coef() const { return 2 * R + 3; }
  int64_t pre() const { return 2 * R + 4; }
};
// R: the projected rows ((n+2)n for a layer's pre-projection, n for the final head).
PreBackLayout pre_back_layout(int64_t R, int64_t n) {
  PreBackLayout l{R, n, 0};
  l.per_token = 2 * l.R + 4 + l.n;
  return l;
}

// Columns of nd per stage-2 block (built-in; tunable): the GEMM path's blocks of X stay in L2;
// the fused path walks down the tokens with each token's slice of a block contiguous, so it
// prefers wide ones (bf16 [4096, 4, 1024], one thread: 64 columns 49 ms, 256 37 ms, 1024 34.6
// ms, 2048 33.9 ms for the whole backward), and the model's nd = 2048 still gives two threads a
// block each.
static_assert(builtin::kMhcPreBlockTokens == mhc_detail::kMixLanes,
              "the pre kernels' built-in block is one set of Sinkhorn mix lanes");
constexpr int64_t kColumnBlock = builtin::kMhcColumnBlock;
constexpr int64_t kFusedColumnBlock = builtin::kMhcFusedColumnBlock;
constexpr int64_t kTokenChunk = 512;    // tokens per stage-2 GEMM: a 512 KiB fp32 block of X

// dx += (dr + coef xr) + pre g over n elements.
template <class T>
void add_stream_grad(T* dx, const float* dr, const float* xr, const T* g, float coef, float pre,
                     int64_t n) {
  int64_t c = 0;
#ifdef TREX_ELEM_AVX2
  const __m256 vc = _mm256_set1_ps(coef), vp = _mm256_set1_ps(pre);
  for (; c + 8 <= n; c += 8) {
    __m256 v = _mm256_fmadd_ps(vc, _mm256_loadu_ps(xr + c), _mm256_loadu_ps(dr + c));
    v = _mm256_add_ps(v, _mm256_mul_ps(simd::load8(g + c), vp));
    simd::store8(dx + c, _mm256_add_ps(simd::load8(dx + c), v));
  }
#endif
  for (; c < n; ++c) st(dx + c, ld(dx + c) + (std::fma(coef, xr[c], dr[c]) + ld(g + c) * pre));
}

// Stage 2 walks a block of columns down the tokens: each token's slice of X, dX and dy lies in
// another 4 KiB page, where the hardware prefetchers (which stay within a page) do not follow,
// so every line was a demand miss. Lines kAhead tokens ahead are requested in software.
constexpr int64_t kAhead = 4;
template <class T>
void prefetch_span(const T* p, int64_t n) {
  const char* b = reinterpret_cast<const char*>(p);
  for (int64_t off = 0; off < n * int64_t(sizeof(T)); off += 64) __builtin_prefetch(b + off);
}

template <class T>
void widen(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, simd::load8(src + i));
#endif
  for (; i < n; ++i) dst[i] = ld(src + i);
}

template <class T>
void projection_backward(const T* X, const float* phi, const T* dy, T* dX, float* dphi,
                         const MhcShape& sh, const PreBackLayout& L, const float* workspace,
                         int64_t column_block, core::ThreadPool& tp) {
  const bool fused = row_isa() == core::Isa::kAvx512;
  if (column_block <= 0) column_block = fused ? kFusedColumnBlock : kColumnBlock;
  const int R = int(L.R);
  const int64_t d = sh.d, nd = sh.n * d;
  // Stage 2 of the backward of m = r (phi xv) and y = sum_i w_i X_i: per block of columns of
  // nd (owned by one thread), over fixed chunks of tokens in order, two GEMMs on the chunk's
  // columns of X (bf16 X widened to fp32 first: a block that stays in L2, the only fp32 copy of
  // X ever made; fp32 X is read in place, the same values in the same order):
  //   dphi[:, cols] += dp_chunk^T X_chunk[:, cols]      (R x cols, summed over the chunk)
  //   DX = dp_chunk phi[:, cols];  dX += DX + coef X + pre_i dy
  const int64_t blocks = (nd + column_block - 1) / column_block;
  if (fused) {  // one pass per block (mhc_projection_backward.h)
    const mhc_detail::StageOneRecords rec{workspace, L.per_token, L.dp(), L.coef(), L.pre()};
    tp.parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t c0 = blk * column_block;
        mhc_detail::projection_backward_block512(X, phi, dy, dX, dphi, sh.tokens, sh.n, d, R,
                                                 rec, c0, std::min(column_block, nd - c0));
      }
    });
    return;
  }
  constexpr bool kF32 = std::is_same_v<T, float>;
  tp.parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    float* xb = kF32 ? nullptr : scratch(0, size_t(kTokenChunk * column_block));
    float* dxb = scratch(1, size_t(kTokenChunk * column_block));
    GemmOptions go;
    go.pool = &tp;  // inside a pool job: the GEMMs run on this thread
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t c0 = blk * column_block, w = std::min(column_block, nd - c0);
      for (int64_t t0 = 0; t0 < sh.tokens; t0 += kTokenChunk) {
        const int64_t nt = std::min(kTokenChunk, sh.tokens - t0);
        const float* xs;  // the chunk's columns of X in fp32, rows xs_ld apart
        int64_t xs_ld;
        if constexpr (kF32) {
          xs = X + t0 * nd + c0;
          xs_ld = nd;
        } else {
          for (int64_t t = 0; t < nt; ++t) {
            if (t + kAhead < nt) prefetch_span(X + (t0 + t + kAhead) * nd + c0, w);
            widen(X + (t0 + t) * nd + c0, xb + t * w, w);
          }
          xs = xb;
          xs_ld = w;
        }
        const float* dp = workspace + t0 * L.per_token + L.dp();
        sgemm(Trans::kYes, Trans::kNo, R, w, nt, 1.f, dp, L.per_token, xs, xs_ld, 1.f,
              dphi + c0, nd, go);
        sgemm(Trans::kNo, Trans::kNo, nt, w, R, 1.f, dp, L.per_token, phi + c0, nd, 0.f, dxb, w,
              go);
        for (int64_t t = 0; t < nt; ++t) {
          const float* rec = workspace + (t0 + t) * L.per_token;
          const float coef = rec[L.coef()];
          const float* xr = xs + t * xs_ld;
          const float* dr = dxb + t * w;
          T* dx = dX + (t0 + t) * nd + c0;
          const T* g = dy + (t0 + t) * d;
          if (t + kAhead < nt) {
            prefetch_span(dx + kAhead * nd, w);
            const int64_t i0 = c0 / d, i1 = (c0 + w - 1) / d;  // the streams the block spans
            if (i0 == i1) prefetch_span(g + kAhead * d + (c0 - i0 * d), w);
            else prefetch_span(g + kAhead * d, d);
          }
          // The block's columns in segments of one stream each (stream i reads dy at col - i d).
          for (int64_t c = 0; c < w;) {
            const int64_t i = (c0 + c) / d, end = std::min(w, (i + 1) * d - c0);
            add_stream_grad(dx + c, dr + c, xr + c, g + (c0 + c - i * d), coef,
                            rec[L.pre() + i], end - c);
            c = end;
          }
        }
      }
    }
  });
}

// Stage 1 of the pre backward for W tokens from t: the gates (LaneGates), dpre = <dy, X_i>,
// the Sinkhorn backward side by side, then each token's record.
template <int W, class T>
void pre_backward_lanes(LaneGates<W>& g, const T* X, const float* phi, const float* b,
                        const float* scale, const T* dy, const float* dpost_in,
                        const float* dC_in, const MhcShape& sh, const PreBackLayout& L,
                        float* workspace, int64_t t) {
  const int n = sh.n, nn = n * n, R = int(L.R);
  const int64_t d = sh.d, nd = n * d;
  g.forward(X, phi, b, scale, sh, t);
  float dpre[kMhcMaxStreams * W], dpost[kMhcMaxStreams * W];
  float dC[kMhcMaxStreams * kMhcMaxStreams * W], dm[kMaxRows * W], db[kMaxRows * W], ds[3 * W];
  for (int l = 0; l < W; ++l) {
    const int64_t tl = t + l;
    float dp_l[kMhcMaxStreams];
    dots(dy + tl * d, X + tl * nd, n, d, dp_l);
    for (int i = 0; i < n; ++i) {
      dpre[i * W + l] = dp_l[i];
      dpost[i * W + l] = dpost_in[tl * n + i];
    }
    for (int q = 0; q < nn; ++q) dC[q * W + l] = dC_in[tl * nn + q];
  }
  mhc_detail::mix_backward<W>(g.m, scale, g.sig_a, g.sig_c, g.trace.data(), dpre, dpost, dC, sh,
                              dm, db, ds);
  for (int l = 0; l < W; ++l) {
    float* rec = workspace + (t + l) * L.per_token;
    const float r = g.r[l];
    float dr = 0.f;
    for (int q = 0; q < R; ++q) {
      rec[L.db() + q] = db[q * W + l];
      rec[L.dp() + q] = r * dm[q * W + l];
      dr += dm[q * W + l] * g.p[q * W + l];
    }
    for (int k = 0; k < 3; ++k) rec[L.ds() + k] = ds[k * W + l];
    rec[L.coef()] = -dr * r * r * r / float(nd);
    for (int i = 0; i < n; ++i) rec[L.pre() + i] = g.pre[i * W + l];
  }
}

// The pre and head backward by tokens (AVX-512, when there is at least one 256-token chunk of
// dphi's sums per thread): each thread takes whole chunks and runs stage 1 and then the fused
// stage 2 over every column, a group of tokens at a time (group: 8 for the fp32 head, 4 for
// the bf16 head, the 16 mix lanes for the pre-projection), so stage 2 finds the group's X rows (16 KiB each in fp32 for
// nd = 4096) and dy in the caches. By columns, stage 2 ran after stage 1 had passed over all of
// X: X and dy were read from memory twice (the head backward at 38-56% of the triad). The
// chunks' dphi sums go to packed buffers, added to dphi in chunk order afterwards: every element
// is the by-columns path's chain and sum, so the bits are the same (test
// Mhc.BackwardColumnBlocksChangeNoBit compares both paths). make_stage(phi_pack) gives one
// job's stage 1, a callable on a group [t, t1) that fills the group's records; phi_pack is phi
// in pack_phi512's layout (the head's stage 1 reads it there).
bool backward_by_tokens(int64_t tokens, const core::ThreadPool& tp) {
  return mhc_backward_runs_by_tokens(tokens, tp.num_threads());
}

// The packed phi and the chunks' dphi sums of one call. Up to kKeptFloats (4 MiB) the calling
// thread keeps its buffer between calls (a fresh MiB each call was a page fault per 4 KiB); a
// call that needs more gets its own, freed on return: kept and grown only, one 32K-token call
// left ~50 MB resident per calling thread and instantiation (reviewer 3, session 12). Such a
// buffer (2 MiB and more) is kept mapped by the allocator, up to 32 MiB, for the next call of
// the same size (arena.cc), so the call pays its page faults once. One buffer per thread,
// whichever backward and storage type calls.
float* dphi_pack_buffer(size_t floats, std::unique_ptr<float[], core::AlignedDeleter>& own) {
  thread_local std::unique_ptr<float[], core::AlignedDeleter> kept;
  thread_local size_t cap = 0;
  if (floats > mhc_detail::kKeptPackFloats) {
    own = core::aligned_array<float>(floats);
    return own.get();
  }
  if (cap < floats) {
    kept = core::aligned_array<float>(floats);
    cap = floats;
  }
  return kept.get();
}

template <class T, class MakeStage>
void backward_by_tokens(const T* X, const float* phi, const T* dy, T* dX, float* dphi,
                        const MhcShape& sh, const PreBackLayout& L, float* workspace,
                        int64_t group, core::ThreadPool& tp, MakeStage&& make_stage,
                        bool overwrite = false) {
  constexpr int64_t kChunk = mhc_detail::kDphiChunkTokens;
  static_assert(kChunk % mhc_detail::kMixLanes == 0, "groups do not straddle chunks");
  const int n = sh.n, R = int(L.R);
  const int64_t d = sh.d, nd = n * d, tokens = sh.tokens;
  const int64_t chunks = (tokens + kChunk - 1) / kChunk;
  const int64_t pack = mhc_detail::projection_pack_floats(n, d, R);
  std::unique_ptr<float[], core::AlignedDeleter> own;
  float* const base = dphi_pack_buffer(size_t(pack * (chunks + 1)), own);
  mhc_detail::pack_phi512(phi, n, d, R, base);
  const mhc_detail::StageOneRecords rec{workspace, L.per_token, L.dp(), L.coef(), L.pre()};
  tp.parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    auto stage_one = make_stage(static_cast<const float*>(base));
    for (int64_t c = c0; c < c1; ++c) {
      float* dphi_pack = base + pack * (c + 1);
      std::fill(dphi_pack, dphi_pack + pack, 0.f);
      const int64_t t1 = std::min(tokens, (c + 1) * kChunk);
      for (int64_t t = c * kChunk; t < t1; t += group) {
        const int64_t g1 = std::min(t1, t + group);
        // A stage that returns true requested the next group's X and dy itself.
        bool ahead = false;
        if constexpr (std::is_same_v<decltype(stage_one(t, g1)), bool>) ahead = stage_one(t, g1);
        else stage_one(t, g1);
        mhc_detail::projection_backward_tokens512(X, dy, dX, base, dphi_pack, t, g1, tokens, n,
                                                  d, R, rec, ahead, overwrite);
      }
    }
  });
  // dphi (zeroed) += each chunk's sums in chunk order, columns split between the threads.
  tp.parallel_for(0, nd, 256, [&](int64_t q0, int64_t q1) {
    for (int64_t c = 0; c < chunks; ++c)
      mhc_detail::add_dphi_pack512(base + pack * (c + 1), dphi, n, d, R, q0, q1);
  });
}

}  // namespace

bool mhc_backward_runs_by_tokens(int64_t tokens, int threads) {
  const int64_t chunks = (tokens + mhc_detail::kDphiChunkTokens - 1) / mhc_detail::kDphiChunkTokens;
  return row_isa() == core::Isa::kAvx512 && chunks >= std::max(threads, 1);
}

int64_t mhc_pre_backward_workspace(const MhcShape& sh) {
  return sh.tokens * pre_back_layout(sh.rows(), sh.n).per_token;
}

template <class T>
void mhc_pre_backward(const T* X, const float* phi, const float* b, const float* scale,
                      const T* dy, const float* dpost, const float* dC, T* dX, float* dphi,
                      float* db, float* dscale, const MhcShape& sh, float* workspace,
                      core::ThreadPool* pool) {
  const int n = sh.n, R = int(sh.rows());
  const int64_t d = sh.d, nd = n * d;
  std::fill(db, db + R, 0.f);
  std::fill(dscale, dscale + 3, 0.f);
  std::fill(dphi, dphi + R * nd, 0.f);
  if (sh.tokens <= 0 || d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  const PreBackLayout L = pre_back_layout(R, n);
  std::vector<float> owned;
  if (!workspace) {
    owned.resize(size_t(sh.tokens * L.per_token));
    workspace = owned.data();
  }
  // Stage 1: per token, everything that is O(R) plus the dots <dy, X_i>; the gates and the
  // Sinkhorn mix for kMixLanes tokens at a time (mhc_sinkhorn.h), the chunk's last few one by one.
  constexpr int kW = mhc_detail::kMixLanes;
  auto make_stage = [&](const float* /*phi_pack*/) {
    return [&, wide = LaneGates<kW>(sh), one = LaneGates<1>(sh)](int64_t t0, int64_t t1) mutable {
      int64_t t = t0;
      for (; t + kW <= t1; t += kW)
        pre_backward_lanes(wide, X, phi, b, scale, dy, dpost, dC, sh, L, workspace, t);
      for (; t < t1; ++t)
        pre_backward_lanes(one, X, phi, b, scale, dy, dpost, dC, sh, L, workspace, t);
    };
  };
  if (backward_by_tokens(sh.tokens, tp)) {
    backward_by_tokens(X, phi, dy, dX, dphi, sh, L, workspace, kW, tp, make_stage);
  } else {
    const int64_t grain = tuned_or("mhc.pre_bwd", {sh.tokens, n, sh.d}, "block_tokens", builtin::kMhcPreBlockTokens);
    tp.parallel_for(0, sh.tokens, grain, [&](int64_t t0, int64_t t1) { make_stage(nullptr)(t0, t1); });
    projection_backward(X, phi, dy, dX, dphi, sh, L, workspace,
                        tuned_or("mhc.pre_bwd", {sh.tokens, n, d}, "column_block", 0), tp);
  }
  for (int64_t t = 0; t < sh.tokens; ++t) {
    const float* rec = workspace + t * L.per_token;
    for (int q = 0; q < R; ++q) db[q] += rec[L.db() + q];
    for (int k = 0; k < 3; ++k) dscale[k] += rec[L.ds() + k];
  }
}

namespace {

// The post-projection of one token. N: the stream count when known at compile time (the
// model's 4), so the stream loops unroll and the mixing coefficients and accumulators live in
// registers (with a run-time n they were arrays in memory, loaded and stored every step); N = 0
// reads n at run time. The coefficients are copied first: out may be fp32 like them, and the
// compiler must know that a store to out cannot change them.
template <int N, class T>
void post_forward_token(const T* f, const T* x, const float* post, const float* C, T* o, int n_rt,
                        int64_t d) {
  const int n = N ? N : n_rt;
  float pt[kMhcMaxStreams], Ct[kMhcMaxStreams * kMhcMaxStreams];
  std::copy(post, post + n, pt);
  std::copy(C, C + n * n, Ct);
  int64_t e = 0;
#ifdef TREX_ELEM_AVX2
  for (; e + 8 <= d; e += 8) {
    __m256 fv = simd::load8(f + e), xs[kMhcMaxStreams];
    for (int j = 0; j < n; ++j) xs[j] = simd::load8(x + j * d + e);
    for (int k = 0; k < n; ++k) {
      __m256 acc = _mm256_mul_ps(_mm256_set1_ps(pt[k]), fv);
      for (int j = 0; j < n; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(Ct[j * n + k]), xs[j], acc);
      simd::store8(o + k * d + e, acc);
    }
  }
#endif
  for (; e < d; ++e) {
    float fv = ld(f + e);
    for (int k = 0; k < n; ++k) {
      float acc = pt[k] * fv;
      for (int j = 0; j < n; ++j) acc = std::fma(Ct[j * n + k], ld(x + j * d + e), acc);
      st(o + k * d + e, acc);
    }
  }
}

// The same on 16 lanes (row_isa() == AVX-512), the tail under a mask; each output element is
// the same FMA chain as above, so the two paths give the same bits. NT: streaming stores (an
// output far larger than the caches; mhc_post_forward checks the alignment); Cvt: bf16 rounded
// by vcvtneps2bf16 where the CPU has AVX512_BF16 (same bits, elementwise_simd512.h).
template <int N, bool NT, bool Cvt, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void post_forward_token512(
    const T* f, const T* x, const float* post, const float* C, T* o, int n_rt, int64_t d) {
  const int n = N ? N : n_rt;
  float pt[kMhcMaxStreams], Ct[kMhcMaxStreams * kMhcMaxStreams];
  std::copy(post, post + n, pt);
  std::copy(C, C + n * n, Ct);
  int64_t e = 0;
  if constexpr (N == 4 && Cvt && std::is_same_v<T, core::bf16>) {
    // A line of each row per step (simd::load32 / store32: one word permute per 16 values
    // instead of a zero-extension and a shift, one rounding per 32): the 16-lane steps' values
    // and chains, so the same bits.
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    // The next token's F and X rows (tokens are contiguous), a line of each per line of these,
    // as the post backward requests them: each token's 5 rows of 2 KiB (d = 1024) were short
    // streams the hardware prefetchers picked up late. (A prefetch never faults: past the last
    // token it is harmless.) One-process A/B against main, quiet lane, loaded (load 5-14),
    // medians of 9 alternating rounds, 4096 x 4 x 1024: 2 threads 1.24-1.34x wall, 1 thread
    // 1.32x CPU; 16384 tokens (past the last-level cache) 2 threads 1.39x CPU. The fp32 16-lane
    // loop with the same requests: 1.03x / 1.06x (7 of 9 faster), not taken.
    // Into L2 (T1) since session 29, as the post backward's: into L1 each request held one of
    // L1's few miss buffers until its line came from memory. One-process A/B against main
    // 75704c6, nice -20 lane, load 7-8, 15 alternating rounds, wall: 1.30x (15 of 15 faster;
    // the committed final run, pffinal.log at load 5.8-8.8: 1.22x); with 64-token blocks as
    // well 1.33x (14 of 15), 64-token blocks with T0 1.10x: not taken.
    const T* fn = f + d;
    const T* xn = x + 4 * d;
    for (; e + 32 <= d; e += 32) {
      _mm_prefetch(reinterpret_cast<const char*>(fn + e), _MM_HINT_T1);
      for (int j = 0; j < 4; ++j) _mm_prefetch(reinterpret_cast<const char*>(xn + j * d + e), _MM_HINT_T1);
      __m512 f0, f1, x0[4], x1[4];
      simd::load32(f + e, lo_idx, hi_idx, &f0, &f1);
      for (int j = 0; j < 4; ++j) simd::load32(x + j * d + e, lo_idx, hi_idx, &x0[j], &x1[j]);
      for (int k = 0; k < 4; ++k) {
        const __m512 pk = _mm512_set1_ps(pt[k]);
        __m512 a0 = _mm512_mul_ps(pk, f0), a1 = _mm512_mul_ps(pk, f1);
        for (int j = 0; j < 4; ++j) {
          const __m512 c = _mm512_set1_ps(Ct[j * 4 + k]);
          a0 = _mm512_fmadd_ps(c, x0[j], a0);
          a1 = _mm512_fmadd_ps(c, x1[j], a1);
        }
        simd::store32<NT>(o + k * d + e, a0, a1);
      }
    }
  }
  for (; e < d; e += 16) {
    const __mmask16 m = simd::lanes16(e, d);
    __m512 fv = simd::load16(f + e, m), xs[kMhcMaxStreams];
    for (int j = 0; j < n; ++j) xs[j] = simd::load16(x + j * d + e, m);
    for (int k = 0; k < n; ++k) {
      __m512 acc = _mm512_mul_ps(_mm512_set1_ps(pt[k]), fv);
      for (int j = 0; j < n; ++j) acc = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * n + k]), xs[j], acc);
      if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(o + k * d + e, acc, m);
      else simd::put16<NT>(o + k * d + e, acc, m);
    }
  }
}

// The 16-lane token function for the stream count, store kind and rounding.
template <int N, class T>
auto post_forward_token512_for(bool nt, bool cvt) {
  return nt ? (cvt ? &post_forward_token512<N, true, true, T> : &post_forward_token512<N, true, false, T>)
            : (cvt ? &post_forward_token512<N, false, true, T> : &post_forward_token512<N, false, false, T>);
}

// The post-projection's backward for one token: dF, dX, and the sums over d of G_k F (dpost)
// and G_k X_j (dC), for any stream count n (n = 4 takes post_backward_token_n4).
template <class T>
void post_backward_token(const T* g, const T* f, const T* x, const float* post, const float* C,
                         T* dF, T* dX, float* dpost, float* dC, int n, int64_t d) {
  float pt[kMhcMaxStreams], Ct[kMhcMaxStreams * kMhcMaxStreams];
  std::copy(post, post + n, pt);
  std::copy(C, C + n * n, Ct);
  float dpo[kMhcMaxStreams] = {}, dc[kMhcMaxStreams * kMhcMaxStreams] = {};
  int64_t e = 0;
#ifdef TREX_ELEM_AVX2
  __m256 apo[kMhcMaxStreams], ac[kMhcMaxStreams * kMhcMaxStreams];
  for (int q = 0; q < n; ++q) apo[q] = _mm256_setzero_ps();
  for (int q = 0; q < n * n; ++q) ac[q] = _mm256_setzero_ps();
  for (; e + 8 <= d; e += 8) {
    __m256 fv = simd::load8(f + e), gs[kMhcMaxStreams], xs[kMhcMaxStreams];
    for (int k = 0; k < n; ++k) gs[k] = simd::load8(g + k * d + e);
    for (int j = 0; j < n; ++j) xs[j] = simd::load8(x + j * d + e);
    __m256 df = _mm256_setzero_ps();
    for (int k = 0; k < n; ++k) {
      df = _mm256_fmadd_ps(_mm256_set1_ps(pt[k]), gs[k], df);
      apo[k] = _mm256_fmadd_ps(gs[k], fv, apo[k]);
    }
    simd::store8(dF + e, df);
    for (int j = 0; j < n; ++j) {
      __m256 dx = _mm256_setzero_ps();
      for (int k = 0; k < n; ++k) {
        dx = _mm256_fmadd_ps(_mm256_set1_ps(Ct[j * n + k]), gs[k], dx);
        ac[j * n + k] = _mm256_fmadd_ps(gs[k], xs[j], ac[j * n + k]);
      }
      simd::store8(dX + j * d + e, dx);
    }
  }
  for (int q = 0; q < n; ++q) dpo[q] = simd::hsum(apo[q]);
  for (int q = 0; q < n * n; ++q) dc[q] = simd::hsum(ac[q]);
#endif
  for (; e < d; ++e) {
    float fv = ld(f + e), df = 0.f;
    for (int k = 0; k < n; ++k) {
      float gk = ld(g + k * d + e);
      df = std::fma(pt[k], gk, df);
      dpo[k] += gk * fv;
    }
    st(dF + e, df);
    for (int j = 0; j < n; ++j) {
      float xj = ld(x + j * d + e), dx = 0.f;
      for (int k = 0; k < n; ++k) {
        float gk = ld(g + k * d + e);
        dx = std::fma(Ct[j * n + k], gk, dx);
        dc[j * n + k] += gk * xj;
      }
      st(dX + j * d + e, dx);
    }
  }
  std::copy(dpo, dpo + n, dpost);
  std::copy(dc, dc + n * n, dC);
}

// One pass of post_backward_token_n4 over a token's 4 G rows: out = c0*g0 + c1*g1 + c2*g2 + c3*g3
// (an FMA chain from 0) and sums[k] = sum over e of g_k * v (8 lane-partial sums, then hsum, then
// the scalar tail by std::fma). At most 11 vectors are live, which AVX2's 16 registers hold.
template <class T>
inline void mix4_dot4(const T* const g[4], const float c[4], const T* v, T* out, float sums[4], int64_t d) {
  const T *g0 = g[0], *g1 = g[1], *g2 = g[2], *g3 = g[3];
  const float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  int64_t e = 0;
#ifdef TREX_ELEM_AVX2
  {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (; e + 8 <= d; e += 8) {
      const __m256 vv = simd::load8(v + e), a0 = simd::load8(g0 + e), a1 = simd::load8(g1 + e),
                   a2 = simd::load8(g2 + e), a3 = simd::load8(g3 + e);
      __m256 o = _mm256_fmadd_ps(_mm256_set1_ps(c0), a0, _mm256_setzero_ps());
      o = _mm256_fmadd_ps(_mm256_set1_ps(c1), a1, o);
      o = _mm256_fmadd_ps(_mm256_set1_ps(c2), a2, o);
      o = _mm256_fmadd_ps(_mm256_set1_ps(c3), a3, o);
      s0 = _mm256_fmadd_ps(a0, vv, s0);
      s1 = _mm256_fmadd_ps(a1, vv, s1);
      s2 = _mm256_fmadd_ps(a2, vv, s2);
      s3 = _mm256_fmadd_ps(a3, vv, s3);
      simd::store8(out + e, o);
    }
    s[0] = simd::hsum(s0), s[1] = simd::hsum(s1), s[2] = simd::hsum(s2), s[3] = simd::hsum(s3);
  }
#endif
  for (; e < d; ++e) {
    const float vv = ld(v + e), a0 = ld(g0 + e), a1 = ld(g1 + e), a2 = ld(g2 + e), a3 = ld(g3 + e);
    float o = std::fma(c0, a0, 0.f);
    o = std::fma(c1, a1, o);
    o = std::fma(c2, a2, o);
    o = std::fma(c3, a3, o);
    s[0] = std::fma(a0, vv, s[0]);
    s[1] = std::fma(a1, vv, s[1]);
    s[2] = std::fma(a2, vv, s[2]);
    s[3] = std::fma(a3, vv, s[3]);
    st(out + e, o);
  }
  std::copy(s, s + 4, sums);
}

// post_backward_token for n = 4 on 8 lanes, split: one pass for dF and dpost, then one
// per row j of dX and dC (the token's 4 G rows read again from L1). In one pass it needs 20
// accumulators beside 4 G, 4 X, F and the dF/dX sums: 30 vectors, which AVX2's 16 ymm registers
// cannot hold, so a build for an AVX2-only CPU kept the accumulators on the stack and stored
// them every 8-lane step. Split, no more than 11 vectors are live. Every accumulator is the
// same chain in the same order (vector part, hsum, then the scalar tail): the same bits, except
// that the tail (d % 8 elements) adds its products by std::fma, as the vector lanes do; before,
// whether GCC contracted them depended on the -march and the vectorizer's choices.
// Both passes are mix4_dot4.
template <class T>
void post_backward_token_n4(const T* g, const T* f, const T* x, const float* post, const float* C,
                            T* dF, T* dX, float* dpost, float* dC, int /*n_rt*/, int64_t d) {
  const T* const rows[4] = {g, g + d, g + 2 * d, g + 3 * d};
  float Ct[16];
  std::copy(C, C + 16, Ct);
  mix4_dot4(rows, post, f, dF, dpost, d);
  for (int j = 0; j < 4; ++j) mix4_dot4(rows, Ct + j * 4, x + j * d, dX + j * d, dC + j * 4, d);
}

// The same on 16 lanes. dF and dX are the same FMA chains as above (same bits); dpost and dC
// are sums over d taken in 16 lane-partial sums instead of 8, so they differ by rounding.
template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void post_backward_token512(
    const T* g, const T* f, const T* x, const float* post, const float* C, T* dF, T* dX,
    float* dpost, float* dC, int n, int64_t d) {
  float pt[kMhcMaxStreams], Ct[kMhcMaxStreams * kMhcMaxStreams];
  std::copy(post, post + n, pt);
  std::copy(C, C + n * n, Ct);
  __m512 apo[kMhcMaxStreams], ac[kMhcMaxStreams * kMhcMaxStreams];
  for (int q = 0; q < n; ++q) apo[q] = _mm512_setzero_ps();
  for (int q = 0; q < n * n; ++q) ac[q] = _mm512_setzero_ps();
  for (int64_t e = 0; e < d; e += 16) {
    // Lanes past d load 0 and add nothing to the sums.
    const __mmask16 m = simd::lanes16(e, d);
    __m512 fv = simd::load16(f + e, m), gs[kMhcMaxStreams], xs[kMhcMaxStreams];
    for (int k = 0; k < n; ++k) gs[k] = simd::load16(g + k * d + e, m);
    for (int j = 0; j < n; ++j) xs[j] = simd::load16(x + j * d + e, m);
    __m512 df = _mm512_setzero_ps();
    for (int k = 0; k < n; ++k) {
      df = _mm512_fmadd_ps(_mm512_set1_ps(pt[k]), gs[k], df);
      apo[k] = _mm512_fmadd_ps(gs[k], fv, apo[k]);
    }
    simd::store16(dF + e, df, m);
    for (int j = 0; j < n; ++j) {
      __m512 dx = _mm512_setzero_ps();
      for (int k = 0; k < n; ++k) {
        dx = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * n + k]), gs[k], dx);
        ac[j * n + k] = _mm512_fmadd_ps(gs[k], xs[j], ac[j * n + k]);
      }
      simd::store16(dX + j * d + e, dx, m);
    }
  }
  for (int q = 0; q < n; ++q) dpost[q] = simd::hsum16(apo[q]);
  for (int q = 0; q < n * n; ++q) dC[q] = simd::hsum16(ac[q]);
}

// The post backward for the model's n = 4 on 16 lanes, in one pass (a 16-lane step at a time):
// dF, the 4 rows of dX and all 20 sums (dpost 4, dC 16) of a step from one load of each of the
// token's 9 rows. Session 6 split it (one pass for dF and dpost, then one per row j of dX and
// dC, the G rows read again from L1) because its accumulators lived in arrays, which GCC stored
// to the stack on every step (20 zmm stores beside the 5 real ones); the split read the 4 G rows
// 5 times and, in bf16, widened them 5 times: 40 of a line's 50 word permutes. Here the
// accumulators are named (in arrays, even indexed by constants only, GCC still kept them in
// memory): 20 of them, 4 G, F or an X row and the output are 26 vectors, and the FMAs read the
// 20 coefficients from memory. Each output and each sum is the split passes' FMA chain in the
// same order (the sums over the 16-lane steps in order), so the same bits. A whole step loads
// plainly (bf16 widened by one word permute); the last, partial one under a mask (lanes past d
// load 0 and add nothing to the sums). NT: streaming stores of dF and dX; Cvt: bf16 rounded by
// vcvtneps2bf16 (where the CPU has AVX512_BF16).
// One-process A/B against the split passes (main 82e7be7), quiet lane, loaded (load 12-12.4),
// CPU time, 4096 x 4 x 1024, medians of 9 alternating rounds: bf16 2 threads 1.30x, 1 thread
// 1.26x; fp32 2 threads 1.11x, 1 thread 1.10x (9 of 9 faster each).
#define TREX_POST512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) inline
template <bool Full, bool Cvt, class T>
TREX_POST512_FN __m512 post_load(const T* p, __mmask16 m) {
  if constexpr (Full && Cvt && std::is_same_v<T, core::bf16>) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, simd::widen_index(0), _mm512_castsi256_si512(h)));
  } else {
    return simd::load16(p, Full ? simd::kAll16 : m);
  }
}
// A step with a subnormal lane, rounded as round16_cvt rounds it (out of line: inlined, its
// constants held 3 of the 32 registers and GCC laid the common conversion out as the jump).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"), noinline, cold)) void
post_put_subnormal(core::bf16* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), simd::round16(v));
}
template <bool Full, bool NT, bool Cvt, class T>
TREX_POST512_FN void post_put(T* p, __m512 v, __mmask16 m) {
  if constexpr (Full && Cvt && std::is_same_v<T, core::bf16>) {
    if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0x20) != 0, 0)) return post_put_subnormal(p, v);
    const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    if constexpr (NT) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  } else if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    simd::put16_cvt<NT>(p, v, Full ? simd::kAll16 : m);
  } else {
    simd::put16<NT>(p, v, Full ? simd::kAll16 : m);
  }
}

// The line path's arithmetic, the step path's (TREX_PB_STEP) chains: c[0] a0 + ... + c[3] a3
// from zero in that order, and a sum taking the low half's product, then the high half's.
TREX_POST512_FN __m512 post_mix4(const float* c, __m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  __m512 v = _mm512_fmadd_ps(_mm512_set1_ps(c[0]), a0, _mm512_setzero_ps());
  v = _mm512_fmadd_ps(_mm512_set1_ps(c[1]), a1, v);
  v = _mm512_fmadd_ps(_mm512_set1_ps(c[2]), a2, v);
  return _mm512_fmadd_ps(_mm512_set1_ps(c[3]), a3, v);
}
TREX_POST512_FN __m512 post_dot2(__m512 s, __m512 al, __m512 bl, __m512 ah, __m512 bh) {
  return _mm512_fmadd_ps(ah, bh, _mm512_fmadd_ps(al, bl, s));
}

template <bool NT, bool Cvt, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void post_backward_token512_n4(
    const T* g, const T* f, const T* x, const float* post, const float* C, T* dF, T* dX,
    float* dpost, float* dC, int /*n_rt*/, int64_t d) {
  float pt[4], Ct[16];
  std::copy(post, post + 4, pt);
  std::copy(C, C + 16, Ct);
  // The next token's 9 rows (tokens are contiguous), a line of each per line of these, as the
  // split passes request them, into L2 (T1): into L1 (T0) each request held one of L1's few
  // miss buffers until its line came from memory, so fewer lines were in flight than the
  // 9-row stream needs; the hardware brings them on from L2. With the 64-token blocks of
  // builtin::value (the thread's next token is its own but at a block's end): one-process A/B
  // against main 75704c6, nice -20 lane, load 10-11, 4096 x 4 x 1024, medians of 11-15
  // alternating rounds: bf16 2 threads 1.18-1.23x CPU, 1.21x wall (15 of 15 faster), 1 thread
  // 1.14x; fp32 2 threads 1.14-1.16x (11 of 11), 1 thread 1.15x (earlier runs; the committed
  // final one, pbfinal.log at load 9.3-9.9: bf16 1.06x CPU / 1.12x wall, fp32 1.17x / 1.25x). Apart, at 2 threads bf16: T1
  // with 8-token blocks 1.04x, T0 with 64-token blocks 1.07x; no requests 0.96x; two or three
  // tokens ahead no better (1.17x, 1.08x). bench/results/mhc_s29.
  const T* gn = g + 4 * d;
  const T* fn = f + d;
  const T* xn = x + 4 * d;
  auto pf = [](const T* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); };
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  const __m512 z = _mm512_setzero_ps();
  __m512 s0 = z, s1 = z, s2 = z, s3 = z;
  __m512 t00 = z, t01 = z, t02 = z, t03 = z, t10 = z, t11 = z, t12 = z, t13 = z;
  __m512 t20 = z, t21 = z, t22 = z, t23 = z, t30 = z, t31 = z, t32 = z, t33 = z;
#define TREX_PB_ROW(FULL, j, u0, u1, u2, u3)                                                      \
  {                                                                                              \
    const __m512 xv = post_load<FULL, Cvt>(x + j * d + e, m);                                    \
    __m512 dx = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * 4]), a0, z);                               \
    dx = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * 4 + 1]), a1, dx);                                 \
    dx = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * 4 + 2]), a2, dx);                                 \
    dx = _mm512_fmadd_ps(_mm512_set1_ps(Ct[j * 4 + 3]), a3, dx);                                 \
    u0 = _mm512_fmadd_ps(a0, xv, u0);                                                            \
    u1 = _mm512_fmadd_ps(a1, xv, u1);                                                            \
    u2 = _mm512_fmadd_ps(a2, xv, u2);                                                            \
    u3 = _mm512_fmadd_ps(a3, xv, u3);                                                            \
    post_put<FULL, NT, Cvt>(dX + j * d + e, dx, m);                                              \
  }
#define TREX_PB_STEP(FULL)                                                                       \
  {                                                                                              \
    const __m512 a0 = post_load<FULL, Cvt>(g + e, m), a1 = post_load<FULL, Cvt>(g + d + e, m);   \
    const __m512 a2 = post_load<FULL, Cvt>(g + 2 * d + e, m);                                    \
    const __m512 a3 = post_load<FULL, Cvt>(g + 3 * d + e, m);                                    \
    const __m512 fv = post_load<FULL, Cvt>(f + e, m);                                            \
    __m512 df = _mm512_fmadd_ps(_mm512_set1_ps(pt[0]), a0, z);                                   \
    df = _mm512_fmadd_ps(_mm512_set1_ps(pt[1]), a1, df);                                         \
    df = _mm512_fmadd_ps(_mm512_set1_ps(pt[2]), a2, df);                                         \
    df = _mm512_fmadd_ps(_mm512_set1_ps(pt[3]), a3, df);                                         \
    s0 = _mm512_fmadd_ps(a0, fv, s0);                                                            \
    s1 = _mm512_fmadd_ps(a1, fv, s1);                                                            \
    s2 = _mm512_fmadd_ps(a2, fv, s2);                                                            \
    s3 = _mm512_fmadd_ps(a3, fv, s3);                                                            \
    post_put<FULL, NT, Cvt>(dF + e, df, m);                                                      \
    TREX_PB_ROW(FULL, 0, t00, t01, t02, t03)                                                     \
    TREX_PB_ROW(FULL, 1, t10, t11, t12, t13)                                                     \
    TREX_PB_ROW(FULL, 2, t20, t21, t22, t23)                                                     \
    TREX_PB_ROW(FULL, 3, t30, t31, t32, t33)                                                     \
  }
  int64_t e = 0;
  // bf16 with AVX512_BF16: a line (32 elements, two 16-lane steps) at a time, so that each
  // output line is written by its two 32-byte streaming stores back to back (simd::store32).
  // Step by step, the 5 outputs' half lines alternated (dF, dX 0-3, then their second halves a
  // step later): each line sat half written in a write-combining buffer while 4 others were
  // started, and the loads of X's rows 2 and 3, right after those stores, took 28% of the
  // function's samples (perf, one thread). Each half is the step path's chain and each sum
  // takes the low half then the high half, as the steps did: the same bits. The next token's G
  // and F lines are requested at the line's start, its X lines after dF, one request a line.
  // One-process A/B against main d4ecc1d (bench/results/mhcbwd_s26), [4096, 4, 1024], CPU
  // time, 15 rounds, load 3.8-4.1: 2 threads 1.16x / 1.17x, 1 thread 1.15x; main's own source
  // as B 1.00-1.02x.
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    const __m512i lo_idx = simd::widen_index(0), hi_idx = simd::widen_index(1);
    for (; e + 32 <= d; e += 32) {
      for (int k = 0; k < 4; ++k) pf(gn + k * d + e);
      pf(fn + e);
      __m512 a0l, a0h, a1l, a1h, a2l, a2h, a3l, a3h, fl, fh;
      simd::load32(g + e, lo_idx, hi_idx, &a0l, &a0h);
      simd::load32(g + d + e, lo_idx, hi_idx, &a1l, &a1h);
      simd::load32(g + 2 * d + e, lo_idx, hi_idx, &a2l, &a2h);
      simd::load32(g + 3 * d + e, lo_idx, hi_idx, &a3l, &a3h);
      simd::load32(f + e, lo_idx, hi_idx, &fl, &fh);
      simd::store32<NT>(dF + e, post_mix4(pt, a0l, a1l, a2l, a3l), post_mix4(pt, a0h, a1h, a2h, a3h));
      s0 = post_dot2(s0, a0l, fl, a0h, fh), s1 = post_dot2(s1, a1l, fl, a1h, fh);
      s2 = post_dot2(s2, a2l, fl, a2h, fh), s3 = post_dot2(s3, a3l, fl, a3h, fh);
      for (int k = 0; k < 4; ++k) pf(xn + k * d + e);
#define TREX_PB_LINE_ROW(j, u0, u1, u2, u3)                                                       \
  {                                                                                              \
    __m512 xl, xh;                                                                               \
    simd::load32(x + j * d + e, lo_idx, hi_idx, &xl, &xh);                                       \
    simd::store32<NT>(dX + j * d + e, post_mix4(Ct + 4 * j, a0l, a1l, a2l, a3l),                  \
                      post_mix4(Ct + 4 * j, a0h, a1h, a2h, a3h));                                 \
    u0 = post_dot2(u0, a0l, xl, a0h, xh), u1 = post_dot2(u1, a1l, xl, a1h, xh);                  \
    u2 = post_dot2(u2, a2l, xl, a2h, xh), u3 = post_dot2(u3, a3l, xl, a3h, xh);                  \
  }
      TREX_PB_LINE_ROW(0, t00, t01, t02, t03)
      TREX_PB_LINE_ROW(1, t10, t11, t12, t13)
      TREX_PB_LINE_ROW(2, t20, t21, t22, t23)
      TREX_PB_LINE_ROW(3, t30, t31, t32, t33)
#undef TREX_PB_LINE_ROW
    }
  }
  for (; e + 16 <= d; e += 16) {
    if (e % kLine == 0) {
      for (int k = 0; k < 4; ++k) pf(gn + k * d + e), pf(xn + k * d + e);
      pf(fn + e);
    }
    const __mmask16 m = simd::kAll16;
    TREX_PB_STEP(true)
  }
  if (e < d) {
    const __mmask16 m = simd::lanes16(e, d);
    TREX_PB_STEP(false)
  }
#undef TREX_PB_STEP
#undef TREX_PB_ROW
  dpost[0] = simd::hsum16(s0), dpost[1] = simd::hsum16(s1), dpost[2] = simd::hsum16(s2), dpost[3] = simd::hsum16(s3);
  const __m512 sums[16] = {t00, t01, t02, t03, t10, t11, t12, t13, t20, t21, t22, t23, t30, t31, t32, t33};
  for (int q = 0; q < 16; ++q) dC[q] = simd::hsum16(sums[q]);
}
#undef TREX_POST512_FN

}  // namespace

template <class T>
void mhc_post_forward(const T* F, const T* X, const float* post, const float* C, T* out,
                      const MhcShape& sh, core::ThreadPool* pool) {
  if (sh.tokens <= 0 || sh.d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int n = sh.n;
  const int64_t d = sh.d, nd = n * d;
  const int64_t grain = tuned_or("mhc.post_fwd", {sh.tokens, n, sh.d}, "block_tokens", builtin::kMhcPostBlockTokens);
  const bool wide = row_isa() == core::Isa::kAvx512;
  // Streaming stores for an output far larger than the caches whose rows of d start on 32-byte
  // boundaries (simd::use_streaming, as the row kernels); 16-lane path only.
  const bool nt = wide && simd::use_streaming<T>(sh.tokens * nd, d, {out});
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  auto* token = wide ? (n == 4 ? post_forward_token512_for<4, T>(nt, cvt) : post_forward_token512_for<0, T>(nt, cvt))
                     : (n == 4 ? &post_forward_token<4, T> : &post_forward_token<0, T>);
  tp.parallel_for(0, sh.tokens, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      token(F + t * d, X + t * nd, post + t * n, C + t * n * n, out + t * nd, n, d);
    simd::fence_streams(nt);
  });
}

template <class T>
void mhc_post_backward(const T* G, const T* F, const T* X, const float* post, const float* C,
                       T* dF, T* dX, float* dpost, float* dC, const MhcShape& sh,
                       core::ThreadPool* pool) {
  if (sh.tokens <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int n = sh.n;
  const int64_t d = sh.d, nd = n * d;
  // 64-token blocks on AVX-512 rows (builtin::value): each token requests the next one's rows,
  // which in 8-token blocks taken in turn by the threads was the other thread's at every block's
  // end, and each block's first token came unrequested.
  const int64_t grain = tuned_or("mhc.post_bwd", {sh.tokens, n, sh.d}, "block_tokens",
                                 builtin::value("mhc.post_bwd", "block_tokens"));
  const bool wide = row_isa() == core::Isa::kAvx512;
  // As the forward: dX (and dF) streamed when far larger than the caches (n = 4 path).
  const bool nt = wide && n == 4 && simd::use_streaming<T>(sh.tokens * nd, d, {dX, dF});
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  auto* n4 = nt ? (cvt ? &post_backward_token512_n4<true, true, T> : &post_backward_token512_n4<true, false, T>)
                : (cvt ? &post_backward_token512_n4<false, true, T> : &post_backward_token512_n4<false, false, T>);
  auto* token = wide ? (n == 4 ? n4 : &post_backward_token512<T>)
                     : (n == 4 ? &post_backward_token_n4<T> : &post_backward_token<T>);
  tp.parallel_for(0, sh.tokens, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      token(G + t * nd, F + t * d, X + t * nd, post + t * n, C + t * n * n, dF + t * d,
            dX + t * nd, dpost + t * n, dC + t * n * n, n, d);
    simd::fence_streams(nt);
  });
}


namespace {

float sigmoid1(float z) { return 1.f / (1.f + std::exp(-z)); }

// The head's gates of one token from its projection p [n] and RMS factor r.
void head_gates(const float* p, float r, const float* b, float scale, int n, float eps, float* m,
                float* sig, float* w) {
  for (int i = 0; i < n; ++i) {
    m[i] = r * p[i];
    sig[i] = sigmoid1(m[i] * scale + b[i]);
    w[i] = sig[i] + eps;
  }
}

// One token's projections p [n] and sum of squares ss into its record of mhc_head_forward's proj.
void save_projections(const float* p, float ss, int n, float* out) {
  std::copy(p, p + n, out);
  out[n] = ss;
}

// The head's projections of the tokens from t (before t1): kHeadTokens at once where nd allows
// and enough remain, else one. Returns how many were projected (p[l], ss[l] for token t + l).
template <class T>
int head_projections(const T* X, const float* phi, int64_t nd, int n, int64_t t, int64_t t1,
                     float (*p)[kMhcMaxStreams], float* ss) {
  if (nd % 8 == 0 && t + kHeadTokens <= t1) {
    const T* xs[kHeadTokens];
    float* ps[kHeadTokens];
    for (int l = 0; l < kHeadTokens; ++l) xs[l] = X + (t + l) * nd, ps[l] = p[l];
    project_head(xs, phi, nd, n, ps, ss);
    return kHeadTokens;
  }
  project(X + t * nd, phi, nd, n, p[0], &ss[0]);
  return 1;
}


#ifdef TREX_ELEM_AVX2
#define TREX_HEAD512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16")))

// The head forward on AVX-512 for n = 4 (d a multiple of a line), groups of 4 tokens in a pipeline: one loop over the
// group's lines projects group g (project_rows512_pairs' two tokens per register, same chains)
// and writes a line of y of group g - 1, whose gates are known (weighted_streams512's chains).
// In two passes (project a group, then its y) the y pass's streaming stores came in bursts of
// a token's 32 lines and stalled on the write buffers (perf: 40% of that pass on one store),
// while the projections waited on X with no y work beside them; here each iteration has 4
// lines of X to load and one line of y to write. A line of each token is loaded whole and the
// token pairs are formed by one two-source word (bf16) or float (fp32) permute per 16 values,
// instead of two 16-byte loads, an insert, a widening and a shift per 16 bf16.
// Every output is the two-pass code's chain in its order: the same bits (Mhc.HeadPathsGiveSameBits*
// compare it with the AVX2 path). kL: elements per 64-byte line.

template <class T>
struct HeadLines {
  static constexpr int kL = int(64 / sizeof(T));
};

// The pair index of sub-step s (8 elements) of a line: lanes 0-7 from the first token's line,
// 8-15 from the second's. bf16: word 2j + 1 of the result (the top half of lane j) takes the
// source word; even words are zeroed by the mask (bf16 << 16 is its fp32 value).
template <class T>
TREX_HEAD512_FN __m512i head_pair_index(int s) {
  if constexpr (std::is_same_v<T, core::bf16>) {
    alignas(64) int16_t idx[32];
    for (int j = 0; j < 16; ++j) idx[2 * j] = 0, idx[2 * j + 1] = int16_t(j < 8 ? 8 * s + j : 32 + 8 * s + j - 8);
    return _mm512_load_si512(idx);
  } else {
    alignas(64) int32_t idx[16];
    for (int j = 0; j < 16; ++j) idx[j] = j < 8 ? 8 * s + j : 16 + 8 * s + j - 8;
    return _mm512_load_si512(idx);
  }
}

// bf16: the pair index of sub-steps s (even) and s + 1 at once: word 2j + 1 of lane j takes
// sub-step s's value, word 2j sub-step s + 1's, lanes 0-7 from the first token's line and 8-15
// from the second's. An AND keeps sub-step s's (the top half of each lane: its fp32 value) and a
// 16-bit shift gives sub-step s + 1's: one two-source permute per 32 values instead of 16.
TREX_HEAD512_FN inline __m512i head_pair2_index(int s) {
  alignas(64) int16_t idx[32];
  for (int j = 0; j < 16; ++j) {
    const int src = j < 8 ? 8 * s + j : 32 + 8 * s + j - 8;
    idx[2 * j] = int16_t(src + 8), idx[2 * j + 1] = int16_t(src);
  }
  return _mm512_load_si512(idx);
}

template <class T>
TREX_HEAD512_FN inline __m512 head_pair(__m512i a, __m512i b, __m512i idx) {
  if constexpr (std::is_same_v<T, core::bf16>)
    return _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau, a, idx, b));
  else
    return _mm512_castsi512_ps(_mm512_permutex2var_epi32(a, idx, b));
}

// One line of y: elements [e, e + kL) of token row x (n streams d apart) into yo, weights wt.
// The 16-lane chains of weighted_streams512 (w_0 x_0, then FMAs in stream order): same bits.
template <bool NT, bool Cvt, class T>
TREX_HEAD512_FN inline void head_y_line(const T* x, const float* wt, int n, int64_t d, T* yo) {
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    // The line split by parity (load32_split: a shift and an AND per stream) instead of halves
    // (load32: two word permutes per stream), put back in order by one permute on the store:
    // 1 permute per line of y instead of 8. Each element's chain and rounding are unchanged.
    __m512 x0, x1;
    simd::load32_split(x, &x0, &x1);
    __m512 w0 = _mm512_set1_ps(wt[0]);
    __m512 a0 = _mm512_mul_ps(w0, x0), a1 = _mm512_mul_ps(w0, x1);
    for (int i = 1; i < n; ++i) {
      simd::load32_split(x + i * d, &x0, &x1);
      const __m512 wi = _mm512_set1_ps(wt[i]);
      a0 = _mm512_fmadd_ps(wi, x0, a0);
      a1 = _mm512_fmadd_ps(wi, x1, a1);
    }
    simd::store32_split<NT ? simd::LineStore::kStream32 : simd::LineStore::kPlain>(yo, a0, a1, simd::split_index());
  } else {
#pragma GCC unroll 2
    for (int h = 0; h < HeadLines<T>::kL / 16; ++h) {
      __m512 acc = _mm512_mul_ps(_mm512_set1_ps(wt[0]), simd::load16(x + 16 * h, simd::kAll16));
      for (int i = 1; i < n; ++i)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(wt[i]), simd::load16(x + i * d + 16 * h, simd::kAll16), acc);
      simd::put16<NT>(yo + 16 * h, acc, simd::kAll16);
    }
  }
}

// head_y_line with the token's weights already broadcast (wv[i] = w_i in every lane): the
// group's loop keeps them in registers for the token's whole row of y.
// line64 (NT, yo on a 64-byte boundary): the line streamed by one 64-byte store instead of an
// extract and two 32-byte ones.
template <bool NT, bool Cvt, class T>
TREX_HEAD512_FN inline void head_y_line_w(const T* x, const __m512 (&wv)[4], int64_t d, T* yo, bool line64) {
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    __m512 x0, x1;
    simd::load32_split(x, &x0, &x1);
    __m512 a0 = _mm512_mul_ps(wv[0], x0), a1 = _mm512_mul_ps(wv[0], x1);
#pragma GCC unroll 3
    for (int i = 1; i < 4; ++i) {
      simd::load32_split(x + i * d, &x0, &x1);
      a0 = _mm512_fmadd_ps(wv[i], x0, a0);
      a1 = _mm512_fmadd_ps(wv[i], x1, a1);
    }
    if (NT && line64) simd::store32_split<simd::LineStore::kStream64>(yo, a0, a1, simd::split_index());
    else simd::store32_split<NT ? simd::LineStore::kStream32 : simd::LineStore::kPlain>(yo, a0, a1, simd::split_index());
  } else {
#pragma GCC unroll 2
    for (int h = 0; h < HeadLines<T>::kL / 16; ++h) {
      __m512 acc = _mm512_mul_ps(wv[0], simd::load16(x + 16 * h, simd::kAll16));
#pragma GCC unroll 3
      for (int i = 1; i < 4; ++i) acc = _mm512_fmadd_ps(wv[i], simd::load16(x + i * d + 16 * h, simd::kAll16), acc);
      simd::put16<NT>(yo + 16 * h, acc, simd::kAll16);
    }
  }
}

// The projections' step over one line of the 4 tokens (kSub sub-steps of 8 elements): the token
// pairs (2q, 2q + 1) formed from the raw lines by one permute each, their squares into sq[q],
// phi's rows (at the line's first element) into a[q][r] and, when Dots, <dy, x> into g[q] from
// dy's raw lines paired the same way. The forward's pipeline and the backward's stage 1 share it,
// so both run the same chains in the same order.
// Packed: phi_i is the line's first strip in mhc_detail::pack_phi512's layout (4 rows of 16
// floats a strip, contiguous) instead of phi at the line's first column (rows nd apart).
// Proj false: neither projections nor squares (the backward given the forward's; Dots alone).
// Two (bf16, the forward): pidx[s] is head_pair2_index(s & ~1), and the pairs of odd s come
// from the permute of s - 1 (one vpermt2w a pair per two sub-steps). Same values, same chains.
template <bool Dots, class T, bool Packed = false, bool Proj = true, bool Two = false>
TREX_HEAD512_FN inline __attribute__((always_inline)) void head_line_step(
    const __m512i* raw, const __m512i* graw, const __m512i* pidx, const float* phi_i, int64_t nd,
    __m512 (&a)[2][4], __m512 (&sq)[2], __m512 (&g)[2]) {
  constexpr int kSub = HeadLines<T>::kL / 8;
  static_assert(!Two || (std::is_same_v<T, core::bf16> && !Dots), "Two: the bf16 forward");
  [[maybe_unused]] __m512i both[2];
  [[maybe_unused]] const __m512i top = _mm512_set1_epi32(int(0xffff0000u));
#pragma GCC unroll 4
  for (int s = 0; s < kSub; ++s) {
    __m512 xv[2];
#pragma GCC unroll 2
    for (int q = 0; q < 2; ++q) {
      if constexpr (Two) {
        if (s % 2 == 0) {
          both[q] = _mm512_permutex2var_epi16(raw[2 * q], pidx[s], raw[2 * q + 1]);
          xv[q] = _mm512_castsi512_ps(_mm512_maskz_and_epi32(simd::kAll16, both[q], top));
        } else {
          xv[q] = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(simd::kAll16, both[q], 16));
        }
      } else {
        xv[q] = head_pair<T>(raw[2 * q], raw[2 * q + 1], pidx[s]);
      }
      if constexpr (Proj) sq[q] = _mm512_fmadd_ps(xv[q], xv[q], sq[q]);
      if constexpr (Dots)
        g[q] = _mm512_fmadd_ps(head_pair<T>(graw[2 * q], graw[2 * q + 1], pidx[s]), xv[q], g[q]);
    }
    if constexpr (!Proj) continue;
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const float* w8 = Packed ? phi_i + (s / 2) * 64 + r * 16 + (s % 2) * 8 : phi_i + r * nd + 8 * s;
      __m512 wv = _mm512_maskz_broadcast_f32x8(simd::kAll16, _mm256_loadu_ps(w8));
      asm("" : "+v"(wv));  // one load for both pairs (as project_rows)
#pragma GCC unroll 2
      for (int q = 0; q < 2; ++q) a[q][r] = _mm512_fmadd_ps(wv, xv[q], a[q][r]);
    }
  }
}

// Each token's sums from the pairs' 8-lane halves (low: token 2q, high: 2q + 1), by the 8-lane
// hsum project_head applies: p[k][r] and ss[k].
TREX_HEAD512_FN inline __attribute__((always_inline)) void head_pair_sums(const __m512 (&a)[2][4], const __m512 (&sq)[2],
                                           float (*p)[4], float* ss) {
  for (int q = 0; q < 2; ++q) {
    for (int r = 0; r < 4; ++r) {
      p[2 * q][r] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, a[q][r], 0));
      p[2 * q + 1][r] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, a[q][r], 1));
    }
    ss[2 * q] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, sq[q], 0));
    ss[2 * q + 1] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, sq[q], 1));
  }
}

// The forward pipeline's software requests: each token's line kHeadAheadLines ahead, into L1
// (_MM_HINT_T0). Before (session 22), the next group's line at the same column, into L2 (T1): a
// whole group ahead (32 KiB of bf16 rows, 64 KiB of fp32), so every line the loop loaded came
// from L2 at best. One-process A/B against that, quiet lane, loaded (load 6-11), 4096 x 4 x 1024,
// CPU-time medians of 9-11 alternating rounds: 16 lines ahead (T0) fp32 1.07-1.13x, bf16
// 1.06-1.09x (1 and 2 threads; 7-11 of 9-11 rounds faster); 12 and 24 lines about the same; 16
// lines with T1 1.00-1.02x; every other line of the next group 0.78-0.93x; none 0.89-0.97x. The
// final 15-round check (bench/results/mhc_s25/fwd_final.log) confirmed fp32 (2 threads wall
// 1.19x, 15 of 15) but not bf16 (1.035x, 9 of 15; 13-round lines 0.98-1.00x): noise there.
constexpr int64_t kHeadAheadLines = 16;
// Session 27 (this Zen 4 class EPYC): beside them, each token's line kHeadFarLines ahead into L2
// (_MM_HINT_T1; T2 measured the same). With the near requests alone the loop waited on its X
// loads (perf -e cpu-clock, fp32, one thread: about 45% of the samples right after the 4 line
// loads and their permutes), and moving the L1 requests farther (24, 32, 48 lines, T0) was
// slower (0.90-0.96x): likely more misses than L1 tracks, where L2 keeps more in flight.
// One-process A/B against main 08d4e22 (bench/results/mhc_s27/fwd_far_final.log), quiet lane,
// LOADED (load 8.5-9): 4096 x 4 x 1024, 15 alternating rounds: fp32 1 thread 1.66x CPU (15 of
// 15 faster), 2 threads 1.45x wall (15 of 15); bf16 1.05x (15 of 15) and 1.01x; the model's
// 2048 x 4 x 512 (X in L3 between calls) 0.97-1.02x (noise). Far distances 32 / 48 / 64 / 96
// lines: fp32 1.47 / 1.60-1.72 / 1.63-1.83 / 1.66-2.2x (fwd_fd.log).
constexpr int64_t kHeadFarLines = 48;

// One group of the pipeline (n = 4): the projections of tokens [tg, tg + 4) into p and ss and,
// when Y, y of the 4 tokens from xy (rows nd apart) into yy (rows d apart) with weights wy.
template <bool Y, bool NT, bool Cvt, class T>
TREX_HEAD512_FN void head_group512(const T* xg, const float* phi, int64_t d, const T* xy,
                                   const float* wy, T* yy, float (*p)[4], float* ss) {
  constexpr int kTok = 4, kL = HeadLines<T>::kL, kSub = kL / 8;
  constexpr bool kTwo = std::is_same_v<T, core::bf16>;
  const int64_t nd = 4 * d, row_lines = d / kL;
  const float* pr0 = phi;
  __m512i pidx[kSub];
  for (int s = 0; s < kSub; ++s) pidx[s] = kTwo ? head_pair2_index(s & ~1) : head_pair_index<T>(s);
  __m512 a[2][4], sq[2], no_dots[2] = {};
  for (int q = 0; q < 2; ++q) {
    sq[q] = _mm512_setzero_ps();
    for (int r = 0; r < 4; ++r) a[q][r] = _mm512_setzero_ps();
  }
  // y's weights in a local copy (fp32 y could alias w otherwise).
  float wl[kTok][4];
  if constexpr (Y)
    for (int k = 0; k < kTok; ++k)
      for (int c = 0; c < 4; ++c) wl[k][c] = wy[k * 4 + c];
  // The loop by y's rows: the 4 lines of X at column i pair with line yl of token yk's row of y,
  // and i runs over the group's nd columns as (yk, yl) runs over the 4 rows of row_lines lines,
  // so token yk's weights stay in registers for its row (reloaded every line before).
  [[maybe_unused]] const bool line64 = NT && ((reinterpret_cast<uintptr_t>(yy) | uintptr_t(d * int64_t(sizeof(T)))) & 63) == 0;
  int64_t i = 0;
  for (int yk = 0; yk < kTok; ++yk) {
    [[maybe_unused]] __m512 wv[4];
    if constexpr (Y && kTwo)
      for (int c = 0; c < 4; ++c) wv[c] = _mm512_set1_ps(wl[yk][c]);
    const T* yx = xy + yk * nd;
    T* yo = yy + yk * d;
    for (int64_t yl = 0; yl < row_lines; ++yl, i += kL) {
      // The lines kHeadAheadLines ahead in each token's row (past the row's end, the first lines
      // of the group after this one: this thread's next, its tokens are contiguous) into L1, and
      // those kHeadFarLines ahead into L2.
      const int64_t ahead = i + kHeadAheadLines * kL, far = i + kHeadFarLines * kL;
      const T* xa = ahead < nd ? xg + ahead : xg + kTok * nd + (ahead - nd);
      const T* xf = far < nd ? xg + far : xg + kTok * nd + (far - nd);
      for (int k = 0; k < kTok; ++k) {
        _mm_prefetch(reinterpret_cast<const char*>(xa + k * nd), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(xf + k * nd), _MM_HINT_T1);
      }
      __m512i raw[kTok];
      for (int k = 0; k < kTok; ++k) raw[k] = _mm512_loadu_si512(xg + k * nd + i);
      head_line_step<false, T, false, true, kTwo>(raw, nullptr, pidx, pr0 + i, nd, a, sq, no_dots);
      // (fp32 keeps reading its weights a line at a time: in registers it read 0.97-1.00x,
      // bench/results/mhc_s30/logs/fwd_final.log.)
      if constexpr (Y && kTwo) head_y_line_w<NT, Cvt>(yx + yl * kL, wv, d, yo + yl * kL, line64);
      else if constexpr (Y) head_y_line<NT, Cvt>(yx + yl * kL, wl[yk], 4, d, yo + yl * kL);
    }
  }
  head_pair_sums(a, sq, p, ss);
}

// Tokens [t0, t1), t1 - t0 >= 4, n = 4: every whole group of 4; returns the first token not done.
template <bool NT, bool Cvt, class T>
TREX_HEAD512_FN int64_t head_forward_pipelined(const T* X, const float* phi, const float* b,
                                               float scale, T* y, float* w, float* proj,
                                               const MhcShape& sh, int64_t t0, int64_t t1) {
  constexpr int kTok = 4, kL = HeadLines<T>::kL;
  const int n = 4;
  const int64_t d = sh.d, nd = n * d;
  float m[kMhcMaxStreams], sig[kMhcMaxStreams], p[kTok][4], ss[kTok];
  auto gates = [&](int64_t tg) {
    for (int k = 0; k < kTok; ++k) {
      const float rr = 1.f / std::sqrt(ss[k] / float(nd) + sh.rms_eps);
      head_gates(p[k], rr, b, scale, n, sh.eps, m, sig, w + (tg + k) * n);
      if (proj) save_projections(p[k], ss[k], n, proj + (tg + k) * (n + 1));
    }
  };
  int64_t t = t0;
  head_group512<false, NT, Cvt>(X + t * nd, phi, d, X, w, y, p, ss);
  gates(t);
  for (; t + 2 * kTok <= t1; t += kTok) {
    head_group512<true, NT, Cvt>(X + (t + kTok) * nd, phi, d, X + t * nd, w + t * n, y + t * d, p, ss);
    gates(t + kTok);
  }
  // y of the last group alone.
  for (int k = 0; k < kTok; ++k)
    for (int64_t e = 0; e < d; e += kL)
      head_y_line<NT, Cvt>(X + (t + k) * nd + e, w + (t + k) * n, n, d, y + (t + k) * d + e);
  return t + kTok;
}

// Stage 1 of the head backward for one group of 4 tokens on AVX-512 (n = 4, d a multiple of a
// line): the projections and squares as head_group512 (the same chains, so the same bits as
// project_head) and, in the same pass, <dy, X_i> as dots() runs it (one 8-lane chain per stream,
// dy times x, then hsum): dy of token 2q and 2q + 1 paired like x by one permute per 16
// values, so lanes 0-7 and 8-15 run dots()' two chains. Before, dots() read each token's X a
// second time (from L1) and widened both X and dy 8 values at a time: some 15 instructions per
// line of X beside the projections' 24. The pass also requests the group `ahead` tokens on
// (the thread's next: tokens are contiguous within a chunk), X and dy, into L2, a line per line
// of these; stage 2 then leaves them out (mhc_projection_backward.cc head_group). Requesting
// this group's dX here as well (for stage 2) was slower: bf16 1.05x against main where without
// it 1.12x (quiet lane, loaded, 2 threads, 9 alternating rounds).
// phi comes from phi_pack (pack_phi512: a strip's 4 rows in 256 contiguous bytes), the same
// values as phi's rows: those lie n d floats apart, a multiple of 4 KiB at the model's widths,
// so a line's 4 phi lines shared one 8-way L1 set with its 4 X lines and 4 dy lines (session 27;
// one-process A/B against the skewed stage 2 alone, loaded, 15 rounds: bf16 1.024x two threads,
// 1.038x one thread, 15 of 15 faster each; fp32 0.97-1.00x).
// Proj false (the forward's projections given): <dy, X_i> alone, p and ss not written.
template <class T, bool Proj = true>
TREX_HEAD512_FN void head_back_group512(const T* xg, const float* phi_pack, const T* dyg, int64_t d, int64_t ahead, float (*p)[4], float* ss,
                                        float (*dyx)[4]) {
  constexpr int kTok = 4, kL = HeadLines<T>::kL, kSub = kL / 8;
  const int64_t nd = 4 * d;
  __m512i pidx[kSub];
  for (int s = 0; s < kSub; ++s) pidx[s] = head_pair_index<T>(s);
  __m512 a[2][4], sq[2], g[2];
  for (int q = 0; q < 2; ++q) {
    sq[q] = g[q] = _mm512_setzero_ps();
    for (int r = 0; r < 4; ++r) a[q][r] = _mm512_setzero_ps();
  }
  const T* xf = xg + ahead * nd;
  const T* df = dyg + ahead * d;
  int64_t e = 0;  // the column within stream `st`
  int st = 0;
  for (int64_t i = 0; i < nd; i += kL) {
    for (int k = 0; k < kTok; ++k) {
      _mm_prefetch(reinterpret_cast<const char*>(xf + k * nd + i), _MM_HINT_T1);
    }
    if (i < kTok * d) _mm_prefetch(reinterpret_cast<const char*>(df + i), _MM_HINT_T1);
    __m512i raw[kTok], graw[kTok];
    for (int k = 0; k < kTok; ++k) {
      raw[k] = _mm512_loadu_si512(xg + k * nd + i);
      graw[k] = _mm512_loadu_si512(dyg + k * d + e);
    }
    head_line_step<true, T, true, Proj>(raw, graw, pidx, phi_pack + (i / 16) * 64, nd, a, sq, g);
    if ((e += kL) == d) {
      for (int q = 0; q < 2; ++q) {
        dyx[2 * q][st] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, g[q], 0));
        dyx[2 * q + 1][st] = simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, g[q], 1));
        g[q] = _mm512_setzero_ps();
      }
      e = 0, ++st;
    }
  }
  if constexpr (Proj) head_pair_sums(a, sq, p, ss);
}
#undef TREX_HEAD512_FN
#endif

}  // namespace

template <class T>
void mhc_head_forward(const T* X, const float* phi, const float* b, float scale, T* y, float* w,
                      const MhcShape& sh, core::ThreadPool* pool, float* proj) {
  if (sh.tokens <= 0 || sh.d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int n = sh.n;
  const int64_t nd = n * sh.d;
  const int64_t grain = tuned_or("mhc.head_fwd", {sh.tokens, n, sh.d}, "block_tokens", builtin::kMhcHeadBlockTokens);
  const bool wide = row_isa() == core::Isa::kAvx512;
  const bool nt = wide && simd::use_streaming<T>(sh.tokens * sh.d, sh.d, {y});
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  auto* ws = !wide ? &weighted_streams<T>
           : nt    ? (cvt ? &weighted_streams512<true, true, T> : &weighted_streams512<true, false, T>)
                   : (cvt ? &weighted_streams512<false, true, T> : &weighted_streams512<false, false, T>);
#ifdef TREX_ELEM_AVX2
  constexpr int64_t kL = 64 / int64_t(sizeof(T));
  const bool pipelined = wide && kHeadTokens == 4 && n == 4 && sh.d % kL == 0;
  auto* pipe = nt ? (cvt ? &head_forward_pipelined<true, true, T> : &head_forward_pipelined<true, false, T>)
                  : (cvt ? &head_forward_pipelined<false, true, T> : &head_forward_pipelined<false, false, T>);
#else
  const bool pipelined = false;
#endif
  // The pipeline's blocks: 64 tokens unless tuned. Its prefetches request the thread's next
  // group (since session 25 only that group's first lines, at the end of each group's pass), which 4-token blocks taken in turn by the threads made the other thread's (before the
  // pipeline, requests two groups ahead served this). Quiet lane, loaded, 2 threads, bf16,
  // 9 alternating rounds against main: blocks of 4 0.71x, 16 1.06-1.11x, 32 1.07-1.26x,
  // 64 1.25x, 128 1.20-1.22x, 256 1.19x.
  // The built-in is builtin::value's for AVX-512 rows (64), what `trex aura` measures.
  const int64_t block = pipelined ? tuned_or("mhc.head_fwd", {sh.tokens, n, sh.d}, "block_tokens",
                                             builtin::value("mhc.head_fwd", "block_tokens"))
                                  : grain;
  tp.parallel_for(0, sh.tokens, block, [&](int64_t t0, int64_t t1) {
    float p[kHeadTokens][kMhcMaxStreams], m[kMhcMaxStreams], sig[kMhcMaxStreams], ss[kHeadTokens];
    int64_t t = t0;
#ifdef TREX_ELEM_AVX2
    if (pipelined && t1 - t0 >= 4) t = pipe(X, phi, b, scale, y, w, proj, sh, t0, t1);
#endif
    for (; t < t1;) {
      const int k = head_projections(X, phi, nd, n, t, t1, p, ss);
      for (int l = 0; l < k; ++l, ++t) {
        const float r = 1.f / std::sqrt(ss[l] / float(nd) + sh.rms_eps);
        head_gates(p[l], r, b, scale, n, sh.eps, m, sig, w + t * n);
        if (proj) save_projections(p[l], ss[l], n, proj + t * (n + 1));
        ws(X + t * nd, w + t * n, n, sh.d, y + t * sh.d);
      }
    }
    simd::fence_streams(nt);
  });
}

namespace {

// Stage 1 of the head backward for tokens [t0, t1): the projections, gates and <dy, X_i>, and
// each token's record (dp, db, ds, coef, pre) in the workspace.
// One token's record from its projections p [n], sum of squares ss and <dy, X_i> dyx [n].
void head_record(const float* p, float ss, const float* dyx, const float* b, float scale,
                 const MhcShape& sh, const PreBackLayout& L, float* rec) {
  const int n = sh.n;
  const int64_t nd = n * sh.d;
  float m[kMhcMaxStreams], sig[kMhcMaxStreams], w[kMhcMaxStreams];
  const float r = 1.f / std::sqrt(ss / float(nd) + sh.rms_eps);
  head_gates(p, r, b, scale, n, sh.eps, m, sig, w);
  float dr = 0.f, ds = 0.f;
  for (int i = 0; i < n; ++i) {
    const float da = dyx[i] * sig[i] * (1.f - sig[i]);
    const float dm = da * scale;
    rec[L.db() + i] = da;
    ds += da * m[i];
    rec[L.dp() + i] = r * dm;
    dr += dm * p[i];
    rec[L.pre() + i] = w[i];
  }
  rec[L.ds()] = ds;
  rec[L.coef()] = -dr * r * r * r / float(nd);
}

// proj: the forward's projections and squares (mhc_head_forward), read instead of recomputed.
template <class T>
void head_stage_one(const T* X, const float* phi, const float* b, float scale, const T* dy,
                    const float* proj, const MhcShape& sh, const PreBackLayout& L,
                    float* workspace, int64_t t0, int64_t t1) {
  const int n = sh.n;
  const int64_t d = sh.d, nd = n * d;
  if (proj) {
    for (int64_t t = t0; t < t1; ++t) {
      float dyx[kMhcMaxStreams];
      dots(dy + t * d, X + t * nd, n, d, dyx);
      const float* pt = proj + t * (n + 1);
      head_record(pt, pt[n], dyx, b, scale, sh, L, workspace + t * L.per_token);
    }
    return;
  }
  float pk[kHeadTokens][kMhcMaxStreams], ssk[kHeadTokens];
  for (int64_t t = t0; t < t1;) {
    const int k = head_projections(X, phi, nd, n, t, t1, pk, ssk);
    for (int l = 0; l < k; ++l, ++t) {
      float dyx[kMhcMaxStreams];
      dots(dy + t * d, X + t * nd, n, d, dyx);  // <dy, X_i>: dy read once for the n streams
      head_record(pk[l], ssk[l], dyx, b, scale, sh, L, workspace + t * L.per_token);
    }
  }
}

#ifdef TREX_ELEM_AVX2
// head_stage_one for tokens [t0, t1), a whole number of 4-token groups, by head_back_group512
// (AVX-512, n = 4, d % (64 / sizeof(T)) == 0); `ahead`: the tokens from one call's group to
// the group whose rows it requests (the thread's next group).
template <class T>
void head_stage_one512(const T* X, const float* phi_pack, const float* b, float scale, const T* dy,
                       const float* proj, const MhcShape& sh, const PreBackLayout& L,
                       float* workspace, int64_t t0, int64_t t1, int64_t ahead) {
  const int64_t d = sh.d, nd = 4 * d;
  float p[4][4], ss[4], dyx[4][4];
  for (int64_t t = t0; t < t1; t += 4) {
    if (proj) {
      head_back_group512<T, false>(X + t * nd, phi_pack, dy + t * d, d, ahead, p, ss, dyx);
      for (int k = 0; k < 4; ++k) {
        const float* pt = proj + (t + k) * 5;
        head_record(pt, pt[4], dyx[k], b, scale, sh, L, workspace + (t + k) * L.per_token);
      }
      continue;
    }
    head_back_group512(X + t * nd, phi_pack, dy + t * d, d, ahead, p, ss, dyx);
    for (int k = 0; k < 4; ++k)
      head_record(p[k], ss[k], dyx[k], b, scale, sh, L, workspace + (t + k) * L.per_token);
  }
}
#endif

}  // namespace

int64_t mhc_head_backward_workspace(const MhcShape& sh) {
  return sh.tokens * pre_back_layout(sh.n, sh.n).per_token;
}

template <class T>
void mhc_head_backward(const T* X, const float* phi, const float* b, float scale, const T* dy,
                       T* dX, float* dphi, float* db, float* dscale, const MhcShape& sh,
                       float* workspace, core::ThreadPool* pool, const float* proj,
                       MhcGradInto dx_into) {
  const int n = sh.n;
  const int64_t d = sh.d, nd = n * d;
  std::fill(db, db + n, 0.f);
  dscale[0] = 0.f;
  std::fill(dphi, dphi + n * nd, 0.f);
  if (sh.tokens <= 0 || d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  const PreBackLayout L = pre_back_layout(n, n);
  std::vector<float> owned;
  if (!workspace) {
    owned.resize(size_t(sh.tokens * L.per_token));
    workspace = owned.data();
  }
  if (backward_by_tokens(sh.tokens, tp)) {
    // Groups of 8 tokens, 4 in bf16: there stage 2 is bound by instructions, not by the 8-token
    // strip's FMA chains, and a group's X rows stay in L1 between the two stages (4 rows of
    // 8 KiB at nd = 4096). Full size [4096, 4, 1024], loaded: one thread, 8 alternating rounds
    // (load 15.5-15.9), bf16 1.09x (8 of 8 rounds faster), fp32 0.99x (so fp32 keeps 8); two
    // threads, kernel_triad_bench, 12 rounds (load 18), bf16 1.12x but faster in only 8 of 12
    // beside fp32's unchanged 1.03x: the one-thread figure is the evidence.
    // Same bits: each dphi element's chain still runs over the tokens in order.
    const int64_t group = std::is_same_v<T, core::bf16> ? 4 : 8;
#ifdef TREX_ELEM_AVX2
    const bool lines = kHeadTokens == 4 && n == 4 && d % (64 / int64_t(sizeof(T))) == 0;
#else
    const bool lines = false;
#endif
    backward_by_tokens(X, phi, dy, dX, dphi, sh, L, workspace, group, tp, [&](const float* phi_pack) {
      return [&, phi_pack](int64_t t, int64_t t1) {
#ifdef TREX_ELEM_AVX2
        if (lines && t1 - t == group) {
          head_stage_one512(X, phi_pack, b, scale, dy, proj, sh, L, workspace, t, t1, group);
          return true;
        }
#endif
        head_stage_one(X, phi, b, scale, dy, proj, sh, L, workspace, t, t1);
        return false;
      };
    }, dx_into == MhcGradInto::kOverwrite);
  } else {
    if (dx_into == MhcGradInto::kOverwrite) std::fill(dX, dX + sh.tokens * nd, T{});  // +0
    const int64_t grain = tuned_or("mhc.head_bwd", {sh.tokens, n, sh.d}, "block_tokens", builtin::kMhcHeadBlockTokens);
    tp.parallel_for(0, sh.tokens, grain, [&](int64_t t0, int64_t t1) {
      head_stage_one(X, phi, b, scale, dy, proj, sh, L, workspace, t0, t1);
    });
    projection_backward(X, phi, dy, dX, dphi, sh, L, workspace,
                        tuned_or("mhc.head_bwd", {sh.tokens, n, d}, "column_block", 0), tp);
  }
  for (int64_t t = 0; t < sh.tokens; ++t) {
    const float* rec = workspace + t * L.per_token;
    for (int i = 0; i < n; ++i) db[i] += rec[L.db() + i];
    dscale[0] += rec[L.ds()];
  }
}

#define TREX_MHC(T)                                                                             \
  template void mhc_pre_forward<T>(const T*, const float*, const float*, const float*, T*,      \
                                   float*, float*, float*, const MhcShape&, core::ThreadPool*); \
  template void mhc_pre_backward<T>(const T*, const float*, const float*, const float*,         \
                                    const T*, const float*, const float*, T*, float*, float*,   \
                                    float*, const MhcShape&, float*, core::ThreadPool*);        \
  template void mhc_post_forward<T>(const T*, const T*, const float*, const float*, T*,         \
                                    const MhcShape&, core::ThreadPool*);                        \
  template void mhc_post_backward<T>(const T*, const T*, const T*, const float*, const float*,  \
                                     T*, T*, float*, float*, const MhcShape&,                   \
                                     core::ThreadPool*);                                        \
  template void mhc_head_forward<T>(const T*, const float*, const float*, float, T*, float*,    \
                                    const MhcShape&, core::ThreadPool*, float*);                \
  template void mhc_head_backward<T>(const T*, const float*, const float*, float, const T*, T*, \
                                     float*, float*, float*, const MhcShape&, float*,           \
                                     core::ThreadPool*, const float*, MhcGradInto);
TREX_MHC(float)
TREX_MHC(core::bf16)
#undef TREX_MHC

}  // namespace trex::kernels
