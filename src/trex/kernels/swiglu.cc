// Fused limited SwiGLU: sigma(gc) is computed once per element and shared by silu, silu' and the
// product, so the forward is one pass (2 reads, 1 write) and the backward one pass (3 reads,
// 2 writes) instead of the ~10 (forward) and ~20 (backward) whole-tensor ops of the eager chain.
// Rows run on 16 lanes where the CPU has AVX-512 (row_isa()), else on 8 (AVX2), else scalar:
// the exp and the bf16 conversions made the 8-lane path instruction-bound, not memory-bound. bf16
// rows store through vcvtneps2bf16 where the CPU has AVX512_BF16 (same bits), and there take
// 32 elements per step (one line of each tensor: fewer widening and rounding instructions), each
// line's sigmoid issued one line ahead of its products and stores (gate_line, fwd_gate_line).
#include "trex/core/trace.h"
#include "trex/kernels/swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/row_blocking.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using core::pool_or_default;

using simd::ld;
using simd::st;
#ifdef TREX_ELEM_AVX2
using simd::exp8;
#endif

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

#ifdef TREX_ELEM_AVX2
inline __m256 sigmoid8(__m256 z) {
  // 1 / (1 + e^-z) by the 12-bit reciprocal estimate and one Newton step (relative error about
  // 1e-7, within an ulp or two of the division), which costs a third of a division's issue slots.
  __m256 one = _mm256_set1_ps(1.f);
  __m256 x = _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), z)));
  __m256 r = _mm256_rcp_ps(x);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(x, r, _mm256_set1_ps(2.f)));
}
#endif

template <bool NT, class T>
void forward_row(const T* g, const T* u, float wr, T* out, int64_t cols, float L) {
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vL = _mm256_set1_ps(L), vnL = _mm256_set1_ps(-L), vw = _mm256_set1_ps(wr);
  for (; i + 8 <= cols; i += 8) {
    __m256 gc = _mm256_min_ps(simd::load8(g + i), vL);
    __m256 uc = _mm256_max_ps(_mm256_min_ps(simd::load8(u + i), vL), vnL);
    __m256 a = _mm256_mul_ps(_mm256_mul_ps(gc, sigmoid8(gc)), uc);
    simd::put8<NT>(out + i, _mm256_mul_ps(a, vw));
  }
#endif
  for (; i < cols; ++i) {
    float gc = std::min(ld(g + i), L), uc = std::clamp(ld(u + i), -L, L);
    st(out + i, gc * sigmoid(gc) * uc * wr);
  }
}

// Returns <dh, a> over the row (the routing-weight gradient).
template <bool NT, class T>
float backward_row(const T* g, const T* u, float wr, const T* dh, T* dg, T* du, int64_t cols,
                   float L) {
  int64_t i = 0;
  float dw = 0.f;
#ifdef TREX_ELEM_AVX2
  __m256 vL = _mm256_set1_ps(L), vnL = _mm256_set1_ps(-L), vw = _mm256_set1_ps(wr);
  __m256 one = _mm256_set1_ps(1.f), acc = _mm256_setzero_ps();
  for (; i + 8 <= cols; i += 8) {
    __m256 gv = simd::load8(g + i), uv = simd::load8(u + i), d = simd::load8(dh + i);
    __m256 gc = _mm256_min_ps(gv, vL);
    __m256 uc = _mm256_max_ps(_mm256_min_ps(uv, vL), vnL);
    __m256 s = sigmoid8(gc);
    __m256 silu = _mm256_mul_ps(gc, s);
    acc = _mm256_fmadd_ps(d, _mm256_mul_ps(silu, uc), acc);
    __m256 da = _mm256_mul_ps(d, vw);
    // silu'(gc) = s (1 + gc (1 - s)); masks as blends: the gradient passes at equality.
    __m256 dsilu = _mm256_mul_ps(s, _mm256_fmadd_ps(gc, _mm256_sub_ps(one, s), one));
    __m256 dgv = _mm256_mul_ps(_mm256_mul_ps(da, uc), dsilu);
    dgv = _mm256_and_ps(dgv, _mm256_cmp_ps(gv, vL, _CMP_LE_OQ));
    __m256 in_u =
        _mm256_and_ps(_mm256_cmp_ps(uv, vnL, _CMP_GE_OQ), _mm256_cmp_ps(uv, vL, _CMP_LE_OQ));
    __m256 duv = _mm256_and_ps(_mm256_mul_ps(da, silu), in_u);
    simd::put8<NT>(dg + i, dgv);
    simd::put8<NT>(du + i, duv);
  }
  dw = simd::hsum(acc);
#endif
  for (; i < cols; ++i) {
    float gv = ld(g + i), uv = ld(u + i), d = ld(dh + i);
    float gc = std::min(gv, L), uc = std::clamp(uv, -L, L);
    float s = sigmoid(gc), silu = gc * s;
    dw += d * silu * uc;
    float da = d * wr;
    st(dg + i, gv <= L ? da * uc * s * (1.f + gc * (1.f - s)) : 0.f);
    st(du + i, (uv >= -L && uv <= L) ? da * silu : 0.f);
  }
  return dw;
}


// clamp(u, -L, L) in one instruction: vrangeps 0x02 gives the smaller magnitude of u and L with
// u's sign (L > 0), the bits of max(min(u, L), -L) for every u but a NaN (both give +-L there).
// The 16-lane rows are bound by instructions: this saves one of about 19 per 16 elements.
TREX_AVX512_FN __m512 clamp16(__m512 u, __m512 vL) {
  return _mm512_maskz_range_ps(simd::kAll16, u, vL, 0x02);
}

// -L <= u <= L from u and clamp16(u): equal exactly there (at +-L and -0 too), unequal beyond
// and for a NaN u (whose clamp is +-L), as the two ordered compares give: one compare instead of
// two and a mask AND.
TREX_AVX512_FN __mmask16 in_range16(__m512 u, __m512 uc) {
  return _mm512_cmp_ps_mask(u, uc, _CMP_EQ_OQ);
}

// The rows above on 16 lanes (AVX-512, row_isa()), the row's tail through the same code under a
// mask. fp32 rows take the same operations lane for lane, with sigmoid16: its reciprocal estimate
// has 14 bits instead of 12, so after the Newton step a value may differ from the AVX2 path's by
// an ulp. bf16 rows take a cheaper sigmoid (sigmoid16_bf16 below), so their results may differ
// from the AVX2 path's by a bf16 ulp.
// Below z = -88.7 the reference's e^-z overflows and its sigmoid is 0; exp16 clamps at e^88 and
// rcp14, unlike the 8-lane rcp, keeps the denormal 1 / e^88, so s is zeroed below -88: else a gate
// of -1e38 would give silu = gc s ~ -1 (not 0) and -inf would give -inf (not the reference's NaN).
TREX_AVX512_FN __m512 sigmoid16(__m512 z) {
  __m512 x =
      _mm512_add_ps(_mm512_set1_ps(1.f), simd::exp16(_mm512_sub_ps(_mm512_setzero_ps(), z)));
  __m512 r = _mm512_maskz_rcp14_ps(simd::kAll16, x);
  const __mmask16 finite_exp = _mm512_cmp_ps_mask(z, _mm512_set1_ps(-88.f), _CMP_GE_OQ);
  return _mm512_maskz_mul_ps(finite_exp, r, _mm512_fnmadd_ps(x, r, _mm512_set1_ps(2.f)));
}

// The sigmoid of bf16 rows: their outputs keep 8 significant bits (half an ulp is 2^-9
// relative), so the exact sigmoid16 (Cephes exp, 1e-7) is more than they can hold and was most of
// the row's instructions (SwiGLU bf16 ran at 35-48% of the triad, bound by them). Here
// e^-z = 2^x with x = -z log2(e): vreduceps gives f = x - floor(x) in [0, 1), a degree-4
// polynomial 2^f (relative error 2.6e-6, fitted on [0, 1]; the forward's is of degree 3, 7.5e-5,
// a minimax fit of the relative error), vscalefps multiplies by 2^floor(x)
// (0 or infinity when out of range, so the forward needs no clamp: a very negative gate gives
// s = 0, as the reference's 1 / (1 + inf), and -inf gives silu = -inf 0 = NaN, as the reference),
// then the 14-bit reciprocal estimate (2^-14 relative). The forward (Bf16Weighted) stops there:
// s within 1.4e-4 relative of the exact one, so a bf16 output is the exact result's rounding or a
// bf16 neighbour of it (test Swiglu.Bf16WithinAnUlpOfF32). The backward (Refine) adds sigmoid16's Newton step,
// s within 1e-5: its dw is an fp32 sum of up to thousands of terms as large as 100, held to 1e-3
// against the reference, which 1e-4 per term can break. The Newton step needs a finite 1 + 2^x
// (inf r = 0 is NaN), so it keeps only lanes with 2^x <= 2^126 and gives s = 0 in the others (z below
// -87.3, where the reference's s is below 1e-38 or 0): a huge negative gate gives 0, not the
// clamped 1 / 2^126 times the gate.
// 9 (forward; 8 with its weight folded in) or 13 instructions instead of sigmoid16's 21.
template <bool Refine>
TREX_AVX512_FN __m512 sigmoid16_bf16(__m512 z) {
  __m512 x = _mm512_mul_ps(z, _mm512_set1_ps(-1.44269504088896341f));
  const __m512 f =
      _mm512_maskz_reduce_ps(simd::kAll16, x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  // The forward's degree-3 steps are Bf16Weighted's (below), with the routing weight folded in.
  static_assert(Refine, "the bf16 forward's sigmoid is Bf16Weighted::sigmoid_times_w");
  __m512 p = _mm512_set1_ps(1.3534168713e-2f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.2011467516e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4144273996e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9300383329e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000026226f));
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.f), _mm512_maskz_scalef_ps(simd::kAll16, p, x));
  const __m512 r = _mm512_maskz_rcp14_ps(simd::kAll16, d);
  return _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(126.f), _CMP_LE_OQ), r,
                             _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.f)));
}

// The bf16 forward's w sigma(gc) in one reciprocal (its rows are bound by the FMA/multiply
// pipes: this drops the product's multiply by w, 2 of 28 such operations per 32 elements):
// w / (1 + 2^x) = 1 / (p / w 2^floor(x) + 1 / w), so the polynomial's coefficients are divided
// by w once per row and 1 / w replaces the 1 of the sigmoid above; the same instructions
// otherwise (the coefficients' extra rounding, 6e-8 relative, is far below the polynomial's
// 7.5e-5). Only for 1 <= |w| <= 2^64: p / w and 1 / w stay at most p and 1, and w s is at least
// s, so no step overflows or underflows where the unfolded sigmoid does not. Below 1 it would:
// w s is formed before gc and uc multiply, (p / w) 2^x overflows near the clamp and w s flushes
// to 0 where gc (w s) uc is a normal number (w 2^-10, gate -85; review of f553cf6). Any other
// weight (below 1, 0, a denormal, infinity, NaN) keeps w = 1 here and multiplies by w after
// (fold false), as before. The product is then (gc * w sigma) * uc: gc times 0 first, so a
// gate of -1e38 still gives 0 (not -inf * 0) for a large uc, as the reference.
struct Bf16Weighted {
  __m512 c3, c2, c1, c0, winv;
  bool fold;
  TREX_AVX512_FN explicit Bf16Weighted(float w) {
    const float a = std::fabs(w);
    fold = a >= 1.f && a <= 0x1p64f;  // false for NaN too
    const float inv = fold ? 1.f / w : 1.f;
    c3 = _mm512_set1_ps(7.8024521470e-2f * inv);
    c2 = _mm512_set1_ps(2.2606715560e-1f * inv);
    c1 = _mm512_set1_ps(6.9583356380e-1f * inv);
    c0 = _mm512_set1_ps(9.9992519617e-1f * inv);
    winv = _mm512_set1_ps(inv);
  }
  // The forward's sigmoid of z times w when fold, else the sigmoid itself (w = 1).
  TREX_AVX512_FN __m512 sigmoid_times_w(__m512 z) const {
    const __m512 x = _mm512_mul_ps(z, _mm512_set1_ps(-1.44269504088896341f));
    const __m512 f =
        _mm512_maskz_reduce_ps(simd::kAll16, x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 p = _mm512_fmadd_ps(c3, f, c2);
    p = _mm512_fmadd_ps(p, f, c1);
    p = _mm512_fmadd_ps(p, f, c0);
    return _mm512_maskz_rcp14_ps(simd::kAll16,
                                 _mm512_add_ps(winv, _mm512_maskz_scalef_ps(simd::kAll16, p, x)));
  }
};

// The 16-lane rows' sigmoid by storage type: exact for fp32, sigmoid16_bf16 for bf16.
template <class T, bool Refine>
TREX_AVX512_FN __m512 sigmoid_for(__m512 z) {
  if constexpr (std::is_same_v<T, core::bf16>) return sigmoid16_bf16<Refine>(z);
  else return sigmoid16(z);
}

// silu'(gc) = s (1 + gc (1 - s)): fp32 rows as the AVX2 path (a multiply, an FMA, a subtract);
// bf16 rows, bound by the multiply/FMA pipes, as s + silu (1 - s) from the silu = gc s they form
// anyway: one FMA and the subtract (2 of the 32 multiplies/FMAs per 32 elements fewer). The two
// differ by fp32 roundings (an ulp or two of fp32), far below a bf16 output's half ulp.
template <class T>
TREX_AVX512_FN __m512 dsilu16(__m512 gc, __m512 s, __m512 silu) {
  const __m512 one = _mm512_set1_ps(1.f);
  if constexpr (std::is_same_v<T, core::bf16>) return _mm512_fmadd_ps(silu, _mm512_sub_ps(one, s), s);
  else return _mm512_mul_ps(s, _mm512_fmadd_ps(gc, _mm512_sub_ps(one, s), one));
}

// A row's store: bf16 through the CPU's conversion where it has AVX512_BF16 (Cvt; same bits,
// elementwise_simd512.h's round16_cvt), else put16.
template <bool NT, bool Cvt, class T>
TREX_AVX512BF16_FN void out16(T* p, __m512 v, __mmask16 m) {
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) simd::put16_cvt<NT>(p, v, m);
  else simd::put16<NT>(p, v, m);
}

// bf16 rows on AVX512_BF16 take 32 elements per step (one line of each tensor), split by parity
// (simd::load32_split / store32_split: a shift and an AND per load instead of two word permutes,
// one permute per store): the same values per element as the 16-lane steps. The backward's dw
// sum runs across the lanes, so its lanes then add even and odd elements: its own order (since
// session 23; before, load32's halves kept the 16-lane steps' order and bits), the same for
// every thread count.
#define TREX_BF16X32_FN TREX_AVX512BF16_FN

// One 16-lane step of forward_row512 / backward_row512 on registers (the 32-wide bf16 loop's
// halves): the same operations in the same order.
TREX_BF16X32_FN __m512 forward16(__m512 gv, __m512 uv, __m512 vL, const Bf16Weighted& k) {
  __m512 gc = simd::min16(gv, vL);
  __m512 uc = clamp16(uv, vL);
  return _mm512_mul_ps(_mm512_mul_ps(gc, k.sigmoid_times_w(gc)), uc);
}
// The bf16 backward's lines on AVX512_BF16 in two stages, software-pipelined one line apart
// (backward_row512): gate_line takes line i + 1's gate through the sigmoid (the long dependent
// chain: min, the exponential's reduction, polynomial and scaling, the reciprocal and its Newton
// step, about 45 cycles) while finish_line completes line i from the gate stage's gc and s: the
// products, dw's terms, the masks, the conversion and the stores. In one step per line, as
// before, a line's ops waited in the FP schedulers behind that chain and filled them, so too few
// lines overlapped (a line took ~57 cycles where its multiply/FMA-pipe ops need ~42); one line
// apart, finish_line's inputs are ready when it issues. The same operations on the same values in
// the same order per element (dw's terms too), so the same bits as the one-stage line.
struct GateLine {
  __m512 gc0, s0, gc1, s1;  // the even and odd elements' clamped gate and sigmoid
  __mmask16 in_g0, in_g1;   // g <= L: dg's gradient passes
};
TREX_BF16X32_FN GateLine gate_line(const core::bf16* g, __m512 vL) {
  GateLine a;
  __m512 g0, g1;
  simd::load32_split(g, &g0, &g1);
  a.gc0 = simd::min16(g0, vL);
  a.s0 = sigmoid16_bf16<true>(a.gc0);
  a.in_g0 = _mm512_cmp_ps_mask(g0, vL, _CMP_LE_OQ);
  a.gc1 = simd::min16(g1, vL);
  a.s1 = sigmoid16_bf16<true>(a.gc1);
  a.in_g1 = _mm512_cmp_ps_mask(g1, vL, _CMP_LE_OQ);
  return a;
}
// One half of finish_line: dg and du of 16 elements, their dw terms added to *acc.
TREX_BF16X32_FN void finish16(__m512 gc, __m512 s, __mmask16 in_g, __m512 uv, __m512 d, __m512 vL,
                              __m512 vw, __m512* acc, __m512* dgv, __m512* duv) {
  __m512 uc = clamp16(uv, vL);
  __m512 silu = _mm512_mul_ps(gc, s);
  *acc = _mm512_fmadd_ps(d, _mm512_mul_ps(silu, uc), *acc);
  __m512 da = _mm512_mul_ps(d, vw);
  __m512 dsilu = dsilu16<core::bf16>(gc, s, silu);
  __mmask16 in_u = in_range16(uv, uc);
  *dgv = _mm512_maskz_mul_ps(in_g, _mm512_mul_ps(da, uc), dsilu);
  *duv = _mm512_maskz_mul_ps(in_u, da, silu);
}
// Line i's outputs (the line at element i) from its gate stage: even elements' dw terms, then odd (the line loop's
// order). One denormal test for both outputs (the common case converts by vcvtne2ps2bf16; a
// line with a denormal lane rounds by round16: the same bits either way).
template <simd::LineStore S>
TREX_BF16X32_FN void finish_line(const GateLine& a, const core::bf16* u, const core::bf16* dh,
                                 core::bf16* dg, core::bf16* du, int64_t i, __m512 vL, __m512 vw,
                                 __m512* acc, __m512i idx) {
  __m512 u0, u1, d0, d1, dg0, dg1, du0, du1;
  simd::load32_split(u + i, &u0, &u1);
  simd::load32_split(dh + i, &d0, &d1);
  finish16(a.gc0, a.s0, a.in_g0, u0, d0, vL, vw, acc, &dg0, &du0);
  finish16(a.gc1, a.s1, a.in_g1, u1, d1, vL, vw, acc, &dg1, &du1);
  __m512i hg, hu;
  if (__builtin_expect(
          _kortestz_mask16_u8(simd::denormal32(dg0, dg1), simd::denormal32(du0, du1)), 1)) {
    hg = simd::words32<true>(dg0, dg1), hu = simd::words32<true>(du0, du1);
  } else {
    hg = simd::words32<false>(dg0, dg1), hu = simd::words32<false>(du0, du1);
  }
  simd::put_line<S>(dg + i, _mm512_maskz_permutexvar_epi16(0xffffffffu, idx, hg));
  simd::put_line<S>(du + i, _mm512_maskz_permutexvar_epi16(0xffffffffu, idx, hu));
}

// The bf16 forward's lines on AVX512_BF16 (32 elements each, split by parity), software-pipelined
// one line apart as the backward's (gate_line above): line i + 1's gate through the sigmoid
// (fwd_gate_line) before line i's product and store (fwd_finish_line). With the weight folded
// into k (TimesW false), or k's sigmoid alone and then times vw per half (TimesW). The same
// operations per element as forward16, so the same bits. Returns the elements done (whole lines).
struct FwdGateLine {
  __m512 gc0, sw0, gc1, sw1;  // the even and odd elements' clamped gate and (w) sigma of it
};
TREX_BF16X32_FN FwdGateLine fwd_gate_line(const core::bf16* g, __m512 vL, const Bf16Weighted& k) {
  FwdGateLine a;
  __m512 g0, g1;
  simd::load32_split(g, &g0, &g1);
  a.gc0 = simd::min16(g0, vL);
  a.sw0 = k.sigmoid_times_w(a.gc0);
  a.gc1 = simd::min16(g1, vL);
  a.sw1 = k.sigmoid_times_w(a.gc1);
  return a;
}
template <simd::LineStore S, bool TimesW>
TREX_BF16X32_FN void fwd_finish_line(const FwdGateLine& a, const core::bf16* u, core::bf16* out,
                                     int64_t i, __m512 vL, __m512 vw, __m512i idx) {
  __m512 u0, u1;
  simd::load32_split(u + i, &u0, &u1);
  __m512 o0 = _mm512_mul_ps(_mm512_mul_ps(a.gc0, a.sw0), clamp16(u0, vL));
  __m512 o1 = _mm512_mul_ps(_mm512_mul_ps(a.gc1, a.sw1), clamp16(u1, vL));
  if constexpr (TimesW) o0 = _mm512_mul_ps(o0, vw), o1 = _mm512_mul_ps(o1, vw);
  simd::store32_split<S>(out + i, o0, o1, idx);
}
template <simd::LineStore S, bool TimesW>
TREX_BF16X32_FN int64_t forward_lines32(const core::bf16* g, const core::bf16* u, core::bf16* out,
                                        int64_t cols, __m512 vL, __m512 vw, const Bf16Weighted& k) {
  int64_t i = 0;
  if (cols < 32) return 0;
  const __m512i idx = simd::split_index();
  FwdGateLine a = fwd_gate_line(g, vL, k), b;
  for (;; i += 64) {
    if (i + 64 > cols) {
      fwd_finish_line<S, TimesW>(a, u, out, i, vL, vw, idx);
      return i + 32;
    }
    b = fwd_gate_line(g + i + 32, vL, k);
    fwd_finish_line<S, TimesW>(a, u, out, i, vL, vw, idx);
    if (i + 96 > cols) {
      fwd_finish_line<S, TimesW>(b, u, out, i + 32, vL, vw, idx);
      return i + 64;
    }
    a = fwd_gate_line(g + i + 64, vL, k);
    fwd_finish_line<S, TimesW>(b, u, out, i + 32, vL, vw, idx);
  }
}

// A bf16 row whose weight Bf16Weighted cannot fold: the sigmoid with w = 1, then times w. These
// are the usual routed rows (weights below 1) and the suite's (weights in (-1, 1)), so on
// AVX512_BF16 they take a line per step too (load32_split / store32_split: the same values per
// element, so the same bits as the 16-lane steps below, which only the row's tail then takes).
template <simd::LineStore S, bool Cvt>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void
forward_row512_times_w(const core::bf16* g, const core::bf16* u, float wr, core::bf16* out,
                       int64_t cols, float L) {
  constexpr bool NT = S != simd::LineStore::kPlain;
  const __m512 vL = _mm512_set1_ps(L), vw = _mm512_set1_ps(wr);
  const Bf16Weighted k(1.f);
  int64_t i = 0;
  if constexpr (Cvt) i = forward_lines32<S, true>(g, u, out, cols, vL, vw, k);
  for (; i < cols; i += 16) {
    const __mmask16 m = simd::lanes16(i, cols);
    out16<NT, Cvt>(out + i,
                   _mm512_mul_ps(forward16(simd::load16(g + i, m), simd::load16(u + i, m), vL, k), vw),
                   m);
  }
}

template <simd::LineStore S, bool Cvt, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void forward_row512(
    const T* g, const T* u, float wr, T* out, int64_t cols, float L) {
  constexpr bool NT = S != simd::LineStore::kPlain;
  const __m512 vL = _mm512_set1_ps(L), vw = _mm512_set1_ps(wr);
  int64_t i = 0;
  if constexpr (std::is_same_v<T, core::bf16>) {
    // bf16: w folded into the sigmoid (Bf16Weighted) where it can be, else multiplied after.
    const Bf16Weighted k(wr);
    if (!k.fold) return forward_row512_times_w<S, Cvt>(g, u, wr, out, cols, L);
    if constexpr (Cvt) i = forward_lines32<S, false>(g, u, out, cols, vL, vw, k);
    for (; i < cols; i += 16) {
      const __mmask16 m = simd::lanes16(i, cols);
      out16<NT, Cvt>(out + i, forward16(simd::load16(g + i, m), simd::load16(u + i, m), vL, k), m);
    }
  } else {
    // Full steps without a mask, written by one 64-byte streaming store where out's rows start
    // on 64 bytes (kStream64), then the tail under a mask: the same values.
    for (; i + 16 <= cols; i += 16) {
      __m512 gc = simd::min16(_mm512_loadu_ps(g + i), vL);
      __m512 uc = clamp16(_mm512_loadu_ps(u + i), vL);
      __m512 a = _mm512_mul_ps(_mm512_mul_ps(gc, sigmoid16(gc)), uc);
      if constexpr (S == simd::LineStore::kStream64) _mm512_stream_ps(out + i, _mm512_mul_ps(a, vw));
      else out16<NT, Cvt>(out + i, _mm512_mul_ps(a, vw), simd::kAll16);
    }
    for (; i < cols; i += 16) {
      const __mmask16 m = simd::lanes16(i, cols);
      __m512 gc = simd::min16(simd::load16(g + i, m), vL);
      __m512 uc = clamp16(simd::load16(u + i, m), vL);
      __m512 a = _mm512_mul_ps(_mm512_mul_ps(gc, sigmoid16(gc)), uc);
      out16<NT, Cvt>(out + i, _mm512_mul_ps(a, vw), m);
    }
  }
}

// One 16-lane step (lanes m) of backward_row512's rows. Full: every lane in the row, so no mask
// (the same values); fp32 outputs of such steps are written by one 64-byte streaming store each
// where the rows start on 64 bytes (kStream64), instead of an extract and two 32-byte stores.
template <simd::LineStore S, bool Cvt, bool Full, class T>
TREX_AVX512BF16_FN __attribute__((always_inline)) void backward_step16(
    const T* g, const T* u, const T* dh, T* dg, T* du, int64_t i, __mmask16 m, __m512 vL,
    __m512 vw, __m512& acc) {
  constexpr bool NT = S != simd::LineStore::kPlain;
  constexpr bool kLine64 = Full && std::is_same_v<T, float> && S == simd::LineStore::kStream64;
  // Lanes past the row's end load 0, so they add 0 to acc.
  __m512 gv = simd::load16(g + i, m), uv = simd::load16(u + i, m), d = simd::load16(dh + i, m);
  __m512 gc = simd::min16(gv, vL);
  __m512 uc = clamp16(uv, vL);
  __m512 s = sigmoid_for<T, true>(gc);
  __m512 silu = _mm512_mul_ps(gc, s);
  acc = _mm512_fmadd_ps(d, _mm512_mul_ps(silu, uc), acc);
  __m512 da = _mm512_mul_ps(d, vw);
  __m512 dsilu = dsilu16<T>(gc, s, silu);
  // The gradient passes at equality; zero-masked products are the blends of the AVX2 path.
  __mmask16 in_g = _mm512_cmp_ps_mask(gv, vL, _CMP_LE_OQ);
  __mmask16 in_u = in_range16(uv, uc);
  __m512 dgv = _mm512_maskz_mul_ps(in_g, _mm512_mul_ps(da, uc), dsilu);
  __m512 duv = _mm512_maskz_mul_ps(in_u, da, silu);
  if constexpr (kLine64) {
    _mm512_stream_ps(reinterpret_cast<float*>(dg + i), dgv);
    _mm512_stream_ps(reinterpret_cast<float*>(du + i), duv);
  } else {
    out16<NT, Cvt>(dg + i, dgv, m);
    out16<NT, Cvt>(du + i, duv, m);
  }
}

template <simd::LineStore S, bool Cvt, class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) float backward_row512(
    const T* g, const T* u, float wr, const T* dh, T* dg, T* du, int64_t cols, float L) {
  const __m512 vL = _mm512_set1_ps(L), vw = _mm512_set1_ps(wr);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  if constexpr (Cvt && std::is_same_v<T, core::bf16>) {
    // Lines split by parity (above): dg and du as the 16-lane steps, dw's sum in its own order.
    // Line i + 1's gate stage runs before line i is finished (gate_line, finish_line): two
    // GateLines alternate, so the one carried from step to step stays in its registers.
    const __m512i idx = simd::split_index();
    if (cols >= 32) {
      GateLine a = gate_line(g, vL), b;
      for (;; i += 64) {
        if (i + 64 > cols) {
          finish_line<S>(a, u, dh, dg, du, i, vL, vw, &acc, idx);
          i += 32;
          break;
        }
        b = gate_line(g + i + 32, vL);
        finish_line<S>(a, u, dh, dg, du, i, vL, vw, &acc, idx);
        if (i + 96 > cols) {
          finish_line<S>(b, u, dh, dg, du, i + 32, vL, vw, &acc, idx);
          i += 64;
          break;
        }
        a = gate_line(g + i + 64, vL);
        finish_line<S>(b, u, dh, dg, du, i + 32, vL, vw, &acc, idx);
      }
    }
  }
  for (; i + 16 <= cols; i += 16)
    backward_step16<S, Cvt, true>(g, u, dh, dg, du, i, simd::kAll16, vL, vw, acc);
  for (; i < cols; i += 16)
    backward_step16<S, Cvt, false>(g, u, dh, dg, du, i, simd::lanes16(i, cols), vL, vw, acc);
  return simd::hsum16(acc);
}

// The bf16 line steps' stores (Cvt rows only): streamed in 64-byte stores where every output row
// starts on a 64-byte boundary (the tensors' own alignment and a row of a multiple of 64 bytes),
// else in 32-byte halves (use_streaming's alignment), else plain.
simd::LineStore line_store(bool nt, bool cvt, size_t row_bytes,
                           std::initializer_list<const void*> outs) {
  if (!nt) return simd::LineStore::kPlain;
  bool line64 = cvt && row_bytes % 64 == 0;
  for (const void* p : outs) line64 = line64 && reinterpret_cast<uintptr_t>(p) % 64 == 0;
  return line64 ? simd::LineStore::kStream64 : simd::LineStore::kStream32;
}

template <class T>
using ForwardRow512 = void (*)(const T*, const T*, float, T*, int64_t, float);
template <class T>
using BackwardRow512 = float (*)(const T*, const T*, float, const T*, T*, T*, int64_t, float);

template <simd::LineStore S, class T>
ForwardRow512<T> forward_row512_of(bool cvt) {
  return cvt ? &forward_row512<S, true, T> : &forward_row512<S, false, T>;
}
template <class T>
ForwardRow512<T> forward_row512_for(simd::LineStore s, bool cvt) {
  switch (s) {
    case simd::LineStore::kStream64: return forward_row512_of<simd::LineStore::kStream64, T>(cvt);
    case simd::LineStore::kStream32: return forward_row512_of<simd::LineStore::kStream32, T>(cvt);
    default: return forward_row512_of<simd::LineStore::kPlain, T>(cvt);
  }
}
template <simd::LineStore S, class T>
BackwardRow512<T> backward_row512_of(bool cvt) {
  return cvt ? &backward_row512<S, true, T> : &backward_row512<S, false, T>;
}
template <class T>
BackwardRow512<T> backward_row512_for(simd::LineStore s, bool cvt) {
  switch (s) {
    case simd::LineStore::kStream64: return backward_row512_of<simd::LineStore::kStream64, T>(cvt);
    case simd::LineStore::kStream32: return backward_row512_of<simd::LineStore::kStream32, T>(cvt);
    default: return backward_row512_of<simd::LineStore::kPlain, T>(cvt);
  }
}

}  // namespace

template <class T>
void swiglu_forward(const T* g, const T* u, const float* w, T* out, int64_t rows, int64_t cols,
                    float limit, core::ThreadPool* pool) {
  if (rows <= 0 || cols <= 0) return;
  core::trace_count(0, 3.0 * double(rows * cols) * sizeof(T));  // g, u in, out
  const RowBlocking rb = row_blocking("swiglu.fwd", rows, cols);
  bool nt = simd::use_streaming<T>(rows * cols, cols, {out}, rb.stream);
  const bool wide = row_isa() == core::Isa::kAvx512;
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  // (fp32 rows take 64-byte line stores too: line_store's cvt argument says a line is stored whole.)
  const ForwardRow512<T> row512 =
      forward_row512_for<T>(line_store(nt, cvt || std::is_same_v<T, float>, cols * sizeof(T), {out}), cvt);
  pool_or_default(pool).parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t o = r * cols;
      float wr = w ? w[r] : 1.f;
      if (wide) row512(g + o, u + o, wr, out + o, cols, limit);
      else if (nt) forward_row<true>(g + o, u + o, wr, out + o, cols, limit);
      else forward_row<false>(g + o, u + o, wr, out + o, cols, limit);
    }
    simd::fence_streams(nt);
  });
}

template <class T>
void swiglu_backward(const T* g, const T* u, const float* w, const T* dh, T* dg, T* du, float* dw,
                     int64_t rows, int64_t cols, float limit, core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::trace_count(0, 5.0 * double(rows * cols) * sizeof(T));  // g, u, dh in, dg, du out
  if (cols <= 0) {
    if (w && dw) std::fill(dw, dw + rows, 0.f);
    return;
  }
  const RowBlocking rb = row_blocking("swiglu.bwd", rows, cols);
  bool nt = simd::use_streaming<T>(rows * cols, cols, {dg, du}, rb.stream);
  const bool wide = row_isa() == core::Isa::kAvx512;
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  const BackwardRow512<T> row512 =
      backward_row512_for<T>(line_store(nt, cvt || std::is_same_v<T, float>, cols * sizeof(T), {dg, du}), cvt);
  pool_or_default(pool).parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t o = r * cols;
      float wr = w ? w[r] : 1.f;
      float s;
      if (wide)
        s = row512(g + o, u + o, wr, dh + o, dg + o, du + o, cols, limit);
      else
        s = nt ? backward_row<true>(g + o, u + o, wr, dh + o, dg + o, du + o, cols, limit)
               : backward_row<false>(g + o, u + o, wr, dh + o, dg + o, du + o, cols, limit);
      if (w && dw) dw[r] = s;
    }
    simd::fence_streams(nt);
  });
}

#define TREX_INSTANTIATE(T)                                                                    \
  template void swiglu_forward<T>(const T*, const T*, const float*, T*, int64_t, int64_t,     \
                                  float, core::ThreadPool*);                                  \
  template void swiglu_backward<T>(const T*, const T*, const float*, const T*, T*, T*, float*, \
                                   int64_t, int64_t, float, core::ThreadPool*);
TREX_INSTANTIATE(float)
TREX_INSTANTIATE(core::bf16)
#undef TREX_INSTANTIATE

}  // namespace trex::kernels
