// The fused stage 2 of the mHC pre/head backward (mhc_projection_backward.h). The portable path
// (mhc.cc) widened a chunk of X to fp32, ran two GEMMs with K = R = 24 (dphi) and K = 512
// tokens (DX, packed each chunk) and a third pass adding DX, coef x and pre dy into dX: four
// passes over the block, and GEMMs whose packing and C traffic weigh heavily at K = 24. Here one
// pass does it all, a strip of 16 columns and 8 tokens at a time: the 8 tokens' x and their DX
// accumulators stay in registers while r runs over the R rows, each dp_tr broadcast once and
// used by both FMAs (dphi_r += dp_tr x_t, DX_t += dp_tr phi_r), dphi_r loaded and stored once
// per 8 tokens (16 FMAs per row and strip, 2 loads and a store beside them).
#include "trex/kernels/mhc_projection_backward.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd512.h"

namespace trex::kernels::mhc_detail {
namespace {

// Loads and stores of a strip: plain on full strips (Full), masked on a segment's last one. A
// compile-time choice: with the mask tested inside the row loop GCC kept the accumulators in
// memory.
// Cvt (bf16 on a CPU with AVX512_BF16): a full strip's 16 bf16 are widened by one zero-masked
// word permute (each value to the top half of its lane, as simd::load16's zero-extension and
// shift) and rounded by vcvtneps2bf16 (simd::round16_cvt, same bits as round16's ten integer
// instructions). A strip loads x, dy and dX and stores dX per token: these conversions were
// as many instructions as the strip's FMAs.
#define TREX_STRIP_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) inline
template <bool Full, bool Cvt = false, class T>
TREX_STRIP_FN __m512 load16(const T* p, __mmask16 m) {
  if constexpr (Full && Cvt && std::is_same_v<T, core::bf16>) {
    const __m512i idx = simd::widen_index(0);
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, idx, _mm512_castsi256_si512(h)));
  } else {
    return simd::load16(p, Full ? simd::kAll16 : m);
  }
}
template <bool Full, bool Cvt = false, class T>
TREX_STRIP_FN void store16(T* p, __m512 v, __mmask16 m) {
  if constexpr (Full && Cvt && std::is_same_v<T, core::bf16>)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), simd::round16_cvt(v));
  else
    simd::store16(p, v, Full ? simd::kAll16 : m);
}

constexpr int kGroup = 8;      // tokens per strip pass: 8 x and 8 DX registers, 25 zmm in all
constexpr int kSmallGroup = 4; // the token path's smaller pass (the bf16 head's groups)
constexpr int64_t kChunk = kDphiChunkTokens;  // tokens per partial sum of dphi (a multiple of kGroup)

// One strip of up to 16 columns (mask m) for TB tokens. x, dx: token 0's strip, rows `row`
// apart; g: token 0's dy at the strip's column of its stream, rows `grow` apart; r0: token 0's
// stage-1 record, records `per` apart; phi, dphi: the strip's packed rows (16 floats each, zero
// past the mask).
// RC: the row count at compile time (4: the final head's n = 4 rows; taken by bf16 with Cvt,
// where it measured 1.08x in L2, fp32 0.98x), 0 for the run-time R. With R known the row loop is
// one unrolled group; the run-time loop kept some of the 25 vectors on the stack.
template <int TB, bool Full, bool Cvt, class T, int RC = 0>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void strip(const T* x, T* dx, const T* g, int64_t row, int64_t grow,
                          const StageOneRecords& rec, const float* r0, int64_t stream,
                          const float* phi, float* dphi, int R_rt, __mmask16 m) {
  const int R = RC ? RC : R_rt;
  const int64_t per = rec.per_token;
  __m512 xv[TB], acc[TB];
  for (int t = 0; t < TB; ++t) {
    xv[t] = load16<Full, Cvt>(x + t * row, m);
    acc[t] = _mm512_setzero_ps();
  }
  const float* dp = r0 + rec.dp_at;
  // Four rows at a time: each dphi element is a chain of TB dependent FMAs, so one row alone
  // would wait on FMA latency (8 x 4 cycles for 16 FMAs); four independent chains fill it.
  int r = 0;
  for (; r + 4 <= R; r += 4) {
    __m512 ph[4], a[4];
    for (int k = 0; k < 4; ++k) {
      ph[k] = _mm512_load_ps(phi + (r + k) * 16);
      a[k] = _mm512_load_ps(dphi + (r + k) * 16);
    }
#pragma GCC unroll 8
    for (int t = 0; t < TB; ++t)
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512 b = _mm512_set1_ps(dp[t * per + r + k]);
        a[k] = _mm512_fmadd_ps(b, xv[t], a[k]);
        acc[t] = _mm512_fmadd_ps(b, ph[k], acc[t]);
      }
    for (int k = 0; k < 4; ++k) _mm512_store_ps(dphi + (r + k) * 16, a[k]);
  }
  for (; r < R; ++r) {
    const __m512 ph = _mm512_load_ps(phi + r * 16);
    __m512 a = _mm512_load_ps(dphi + r * 16);
    for (int t = 0; t < TB; ++t) {
      const __m512 b = _mm512_set1_ps(dp[t * per + r]);
      a = _mm512_fmadd_ps(b, xv[t], a);
      acc[t] = _mm512_fmadd_ps(b, ph, acc[t]);
    }
    _mm512_store_ps(dphi + r * 16, a);
  }
  for (int t = 0; t < TB; ++t) {
    const float coef = r0[t * per + rec.coef_at], pre = r0[t * per + rec.pre_at + stream];
    __m512 v = _mm512_fmadd_ps(_mm512_set1_ps(coef), xv[t], acc[t]);
    v = _mm512_add_ps(v, _mm512_mul_ps(load16<Full, Cvt>(g + t * grow, m), _mm512_set1_ps(pre)));
    store16<Full, Cvt>(dx + t * row, _mm512_add_ps(load16<Full, Cvt>(dx + t * row, m), v), m);
  }
}

// A strip of the block: its first column, lanes, and stream (columns read dy at col - i d).
struct Strip {
  int64_t col, stream;
  __mmask16 mask;
};

// Strips ahead of the one computing whose lines are requested in software (in the order the
// strips run: the group's next strips, then the next group's first ones). Each token's slice of
// the block lies in another 4 KiB page (rows nd elements apart), and a group walks 8 tokens' X,
// dX and dy side by side: 24 short streams, more than the hardware prefetchers follow, so the
// loads of x and dx were where stage 2's cycles went (perf). A strip takes some 50 cycles;
// 8 strips cover a miss to memory. (Before, the whole next group was requested at once, about
// 1500 lines per group, most of them dropped with the miss buffers full.)
constexpr size_t kAheadStrips = 8;

// Every strip of the block for tokens [t0, t0 + TB); phi_pack, dphi_pack: R x 16 floats per strip.
// ByTokens (the token path): X and dy of this group are in the caches already (stage 1 just
// read them), so only dX is requested ahead, and X and dy of the next group are requested into
// L2 strip by strip for its stage 1, which otherwise waited on memory with 4 streams in flight.
template <int TB, class T, bool ByTokens = false>
TREX_AVX512_FN void block_tokens(const T* X, const T* dy, T* dX, const float* phi_pack,
                                 float* dphi_pack, int64_t t0, int64_t tokens, int64_t nd,
                                 int64_t d, int R, const StageOneRecords& rec,
                                 const std::vector<Strip>& strips) {
  const float* r0 = rec.base + t0 * rec.per_token;
  const size_t ns = strips.size();
  const bool cvt = std::is_same_v<T, core::bf16> && core::cpu_features().avx512_bf16;
  for (size_t j = 0; j < ns; ++j) {
    if constexpr (TB > 1 && ByTokens) {
      size_t a = j + kAheadStrips;
      int64_t tg = t0;
      if (a >= ns) a -= ns, tg += TB;
      if (a < ns && tg + TB <= tokens &&
          (strips[a].col * int64_t(sizeof(T))) % 64 < 16 * int64_t(sizeof(T)))
        for (int t = 0; t < TB; ++t) __builtin_prefetch(dX + (tg + t) * nd + strips[a].col, 1);
      const Strip& q = strips[j];
      if (t0 + 2 * TB <= tokens && (q.col * int64_t(sizeof(T))) % 64 < 16 * int64_t(sizeof(T)))
        for (int t = TB; t < 2 * TB; ++t) {
          _mm_prefetch(reinterpret_cast<const char*>(X + (t0 + t) * nd + q.col), _MM_HINT_T1);
          if (q.stream == 0)
            _mm_prefetch(reinterpret_cast<const char*>(dy + (t0 + t) * d + q.col), _MM_HINT_T1);
        }
    } else if constexpr (TB > 1) {
      size_t a = j + kAheadStrips;
      int64_t tg = t0;
      if (a >= ns) a -= ns, tg += TB;
      // One request per line: every strip in fp32, every other in bf16 (32 elements a line).
      if (a < ns && tg + TB <= tokens &&
          (strips[a].col * int64_t(sizeof(T))) % 64 < 16 * int64_t(sizeof(T))) {
        const Strip& q = strips[a];
        for (int t = 0; t < TB; ++t) {
          __builtin_prefetch(X + (tg + t) * nd + q.col);
          __builtin_prefetch(dX + (tg + t) * nd + q.col, 1);
          __builtin_prefetch(dy + (tg + t) * d + (q.col - q.stream * d));
        }
      }
    }
    const Strip& s = strips[j];
    auto* f = s.mask != simd::kAll16 ? &strip<TB, false, false, T>
              : cvt                  ? (R == 4 ? &strip<TB, true, true, T, 4> : &strip<TB, true, true, T>)
                                     : &strip<TB, true, false, T>;
    f(X + t0 * nd + s.col, dX + t0 * nd + s.col, dy + t0 * d + (s.col - s.stream * d), nd, d,
      rec, r0, s.stream, phi_pack + int64_t(j) * R * 16, dphi_pack + int64_t(j) * R * 16, R,
      s.mask);
  }
}

// A line of bf16 dX (lo: elements 0-15, hi: 16-31) rounded as store16<true, true> rounds each
// half (round16_cvt: vcvtneps2bf16, round16 for a half with a denormal lane), by one
// vcvtne2ps2bf16 and one store after one test of both halves. Per strip and token, the store
// took a test, a branch GCC laid out as taken (to the conversion out of line) and a jump back,
// the conversion and a store; here per line and token two tests, one untaken branch, one
// conversion and one store.
// NT: a streaming store of the whole line (p 64-byte aligned): the head's overwritten dX, whose
// line is never read, so the store needs no read of it first (a plain store reads every line of
// dX from memory before writing it: 32 MiB of the bf16 [4096, 4, 1024] backward's ~104 MiB).
template <bool NT = false>
TREX_STRIP_FN void store_line_cvt(core::bf16* p, __m512 lo, __m512 hi) {
  if (__builtin_expect(!_kortestz_mask16_u8(_mm512_fpclass_ps_mask(lo, 0x20), _mm512_fpclass_ps_mask(hi, 0x20)), 0)) {
    if constexpr (NT) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p),
                          _mm512_inserti64x4(_mm512_castsi256_si512(simd::round16(lo)), simd::round16(hi), 1));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), simd::round16(lo));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 16), simd::round16(hi));
    }
    return;
  }
  if constexpr (NT) _mm512_stream_si512(reinterpret_cast<__m512i*>(p), reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  else _mm512_storeu_si512(p, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
}

// block_tokens<TB, T, true> for the final head's R = 4 rows where every strip is full and lines
// hold whole strips of one stream: the bf16 head's 4-token groups (d % 32 == 0, AVX512_BF16,
// Cvt: two strips a line) and the fp32 head's 8-token groups (d % 16 == 0, a strip a line). The
// same strips in the same order with the same operations per element (the same bits), in one
// loop. In bf16 the strips ran at about 190 instructions each for 64 elements (2 threads at
// 0.60 of the triad, bound by instructions, not memory): strip() called through a pointer per
// strip (13 arguments, the records' offsets reloaded per token, the pre gate looked up per token
// and strip), and the prefetch bookkeeping per strip. Here the group's dp, coef and the stream's
// pre are loaded once, and the prefetches are issued once per line.
// Next: request the next group's X and dy (into L2) here; false where stage 1 requested them
// (mhc.cc head_back_group512). Overwrite: dX = +0 + v instead of dX + v, dX not read
// (projection_backward_tokens512's overwrite).
// NT (bf16 with Cvt and Overwrite, dX 64-byte aligned): dX's lines streamed (store_line_cvt),
// and not requested ahead (a request for writing reads the line).
template <int TB, bool Cvt, bool Next, class T, bool Overwrite = false, bool NT = false>
TREX_STRIP_FN void head_group(const T* X, const T* dy, T* dX, const float* phi_pack,
                              float* dphi_pack, int64_t t0, int64_t tokens, int64_t n, int64_t d,
                              const StageOneRecords& rec) {
  constexpr int R = 4, kSpl = int(64 / (16 * sizeof(T)));  // strips per line
  const int64_t nd = n * d, ns = nd / 16, per = rec.per_token;
  const float* r0 = rec.base + t0 * per;
  // dp [TB][R], coef [TB] and the stream's pre [TB] in one array, read through sc below.
  float scalars[TB * R + 2 * TB];
  float *const coef = scalars + TB * R, *const pre = coef + TB;
  for (int t = 0; t < TB; ++t) {
    for (int r = 0; r < R; ++r) scalars[t * R + r] = r0[t * per + rec.dp_at + r];
    coef[t] = r0[t * per + rec.coef_at];
  }
  const bool next_group = t0 + 2 * TB <= tokens;  // the next group exists: request its rows
  const T* x0 = X + t0 * nd;
  T* dx0 = dX + t0 * nd;
  for (int64_t i = 0; i < n; ++i) {
    for (int t = 0; t < TB; ++t) pre[t] = r0[t * per + rec.pre_at + i];
    const T* g0 = dy + t0 * d - i * d;  // dy at column c of stream i: g0 + c
    for (int64_t c = i * d; c < (i + 1) * d; c += 16 * kSpl) {
      // As block_tokens: dX 8 strips ahead (into the next group past the row's end), X and dy
      // of the next group into L2, one request per line.
      const int64_t j = c / 16;
      int64_t a = j + int64_t(kAheadStrips), tg = t0;
      if (a >= ns) a -= ns, tg += TB;
      if (!NT && tg + TB <= tokens)
        for (int t = 0; t < TB; ++t) __builtin_prefetch(dX + (tg + t) * nd + a * 16, 1);
      if (Next && next_group)
        for (int t = TB; t < 2 * TB; ++t) {
          _mm_prefetch(reinterpret_cast<const char*>(X + (t0 + t) * nd + c), _MM_HINT_T1);
          if (i == 0) _mm_prefetch(reinterpret_cast<const char*>(dy + (t0 + t) * d + c), _MM_HINT_T1);
        }
      // fp32: the scalars through a pointer GCC cannot hoist past this line. Hoisted, their 48
      // broadcasts stayed in vectors beside the strip's 24 and spilled (122 zmm stack accesses in
      // the function); read per line, each FMA's broadcast comes from L1 (none). One-process A/B
      // against bf5a1e5, quiet lane, loaded (load 10.5-13), CPU time: 2 threads 1.06x and 1.05x
      // (12 of 13, 15 of 15 faster), 1 thread 1.09x and 1.02x (12 of 13, 9 of 15). bf16 (24
      // broadcasts, 73 stack accesses) measured 0.98x / 1.01x the same way and keeps them hoisted.
      const float* sc = scalars;
      if constexpr (!Cvt) asm("" : "+r"(sc));
      [[maybe_unused]] __m512 line[kSpl][TB];  // bf16: the line's dX, stored after both strips
#pragma GCC unroll 2
      for (int h = 0; h < kSpl; ++h) {
        const int64_t cc = c + 16 * h;
        const float* ph = phi_pack + (j + h) * R * 16;
        float* dph = dphi_pack + (j + h) * R * 16;
        __m512 xv[TB], acc[TB], pv[R], av[R];
        for (int t = 0; t < TB; ++t) {
          xv[t] = load16<true, Cvt>(x0 + t * nd + cc, simd::kAll16);
          acc[t] = _mm512_setzero_ps();
        }
        for (int k = 0; k < R; ++k) {
          pv[k] = _mm512_load_ps(ph + k * 16);
          av[k] = _mm512_load_ps(dph + k * 16);
        }
#pragma GCC unroll 8
        for (int t = 0; t < TB; ++t)
#pragma GCC unroll 4
          for (int k = 0; k < R; ++k) {
            const __m512 b = _mm512_set1_ps(sc[t * R + k]);
            av[k] = _mm512_fmadd_ps(b, xv[t], av[k]);
            acc[t] = _mm512_fmadd_ps(b, pv[k], acc[t]);
          }
        for (int k = 0; k < R; ++k) _mm512_store_ps(dph + k * 16, av[k]);
#pragma GCC unroll 8
        for (int t = 0; t < TB; ++t) {
          __m512 v = _mm512_fmadd_ps(_mm512_set1_ps(sc[TB * R + t]), xv[t], acc[t]);
          v = _mm512_add_ps(v, _mm512_mul_ps(load16<true, Cvt>(g0 + t * d + cc, simd::kAll16),
                                             _mm512_set1_ps(sc[TB * R + TB + t])));
          T* o = dx0 + t * nd + cc;
          const __m512 out = _mm512_add_ps(Overwrite ? _mm512_setzero_ps() : load16<true, Cvt>(o, simd::kAll16), v);
          if constexpr (Cvt) line[h][t] = out;
          else store16<true, Cvt>(o, out, simd::kAll16);
        }
      }
      if constexpr (Cvt)
        for (int t = 0; t < TB; ++t) store_line_cvt<NT>(dx0 + t * nd + c, line[0][t], line[1][t]);
    }
  }
}

// head_group for the fp32 head (R = n = 4, d % 16 == 0: a strip is a line) with the group's
// tokens skewed along the row: slot s of the group (tokens s P .. s P + P - 1) runs strip
// j - s lag while slot 0 runs strip j. The rows of X and dX are n d floats apart, a multiple of
// 4 KiB for the model's widths, and dy's d floats, so at one column the group's 8 X, 8 dX and 8 dy
// lines all fall in one set of the 8-way L1 (the same column of every row, and the tensors'
// bases alike mod 4 KiB): they evict each other (the whole fp32 head backward at 4096 x 4 x
// 1024 took 1.75x the time it takes at d = 1040, whose rows are 16640 bytes apart: one thread,
// loaded, 5 rounds). Skewed, a set holds P lines of each. Each dphi element still takes the group's tokens in order (slot s reaches a strip
// lag iterations after slot s - 1), through dphi_pack between slots (exact fp32 stores and
// loads), and each element's operations are head_group's: the same bits.
// lag: 2 strips (1, 2 and 4 measured 1.29x, 1.34x, 1.35x with P = 2; P = 1 1.20-1.22x, P = 4
// 1.20-1.25x; one-process A/B against head_group, 4096 x 4 x 1024, 2 threads, loaded).
// NT (Overwrite, dX 64-byte aligned): dX's lines streamed and not requested for writing, as
// head_group's NT (a plain store first read each line of dX from memory; the model's fp32 head
// 2048 x 4 x 512: 1.10-1.22x wall, bench/results/mhc_s28/logs/ntf1.log).
template <int TB, int P, bool Next, bool Overwrite = false, bool NT = false>
TREX_STRIP_FN void head_group_skewed(const float* X, const float* dy, float* dX,
                                     const float* phi_pack, float* dphi_pack, int64_t t0,
                                     int64_t tokens, int64_t n, int64_t d,
                                     const StageOneRecords& rec) {
  constexpr int R = 4, kSlots = TB / P;
  constexpr int64_t lag = 2;
  static_assert(TB % P == 0, "whole slots");
  const int64_t nd = n * d, ns = nd / 16, sps = d / 16, per = rec.per_token;
  const float* r0 = rec.base + t0 * per;
  // dp [TB][R], coef [TB], pre [TB][R] (the token's gate of each stream; n = R), read through sc.
  float scalars[TB * R + TB + TB * R];
  for (int t = 0; t < TB; ++t) {
    for (int r = 0; r < R; ++r) {
      scalars[t * R + r] = r0[t * per + rec.dp_at + r];
      scalars[TB * R + TB + t * R + r] = r0[t * per + rec.pre_at + r];
    }
    scalars[TB * R + t] = r0[t * per + rec.coef_at];
  }
  const bool next_group = t0 + 2 * TB <= tokens;
  for (int64_t j = 0; j < ns + (kSlots - 1) * lag; ++j) {
    if (Next && next_group && j < ns) {
      const int64_t c = j * 16;
      for (int t = TB; t < 2 * TB; ++t) {
        _mm_prefetch(reinterpret_cast<const char*>(X + (t0 + t) * nd + c), _MM_HINT_T1);
        if (c < d) _mm_prefetch(reinterpret_cast<const char*>(dy + (t0 + t) * d + c), _MM_HINT_T1);
      }
    }
    // The scalars read per iteration, as head_group's fp32 form (hoisted, they spill).
    const float* sc = scalars;
    asm("" : "+r"(sc));
#pragma GCC unroll 8
    for (int s = 0; s < kSlots; ++s) {
      const int64_t js = j - s * lag;
      if (js < 0 || js >= ns) continue;
      const int64_t c = js * 16, i = js / sps;
      int64_t a = js + int64_t(kAheadStrips), tg = t0;
      if (a >= ns) a -= ns, tg += TB;
      if (!NT && tg + TB <= tokens)
        for (int q = 0; q < P; ++q) __builtin_prefetch(dX + (tg + s * P + q) * nd + a * 16, 1);
      const float* ph = phi_pack + js * R * 16;
      float* dph = dphi_pack + js * R * 16;
      __m512 xv[P], acc[P], pv[R], av[R];
      for (int q = 0; q < P; ++q) {
        xv[q] = _mm512_loadu_ps(X + (t0 + s * P + q) * nd + c);
        acc[q] = _mm512_setzero_ps();
      }
      for (int k = 0; k < R; ++k) {
        pv[k] = _mm512_load_ps(ph + k * 16);
        av[k] = _mm512_load_ps(dph + k * 16);
      }
      for (int q = 0; q < P; ++q)
        for (int k = 0; k < R; ++k) {
          const __m512 b = _mm512_set1_ps(sc[(s * P + q) * R + k]);
          av[k] = _mm512_fmadd_ps(b, xv[q], av[k]);
          acc[q] = _mm512_fmadd_ps(b, pv[k], acc[q]);
        }
      for (int k = 0; k < R; ++k) _mm512_store_ps(dph + k * 16, av[k]);
      for (int q = 0; q < P; ++q) {
        const int t = s * P + q;
        __m512 v = _mm512_fmadd_ps(_mm512_set1_ps(sc[TB * R + t]), xv[q], acc[q]);
        v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_loadu_ps(dy + (t0 + t) * d + c - i * d),
                                           _mm512_set1_ps(sc[TB * R + TB + t * R + i])));
        float* o = dX + (t0 + t) * nd + c;
        const __m512 out = _mm512_add_ps(Overwrite ? _mm512_setzero_ps() : _mm512_loadu_ps(o), v);
        if constexpr (NT) _mm512_stream_ps(o, out);
        else _mm512_storeu_ps(o, out);
      }
    }
  }
}

// dphi's rows += the packed partial sums of the strips whose first column lies in [c0, c1)
// (R x 16 floats per strip, as block_tokens accumulates them).
TREX_AVX512_FN void add_strip_sums(const float* dphi_pack, float* dphi, const std::vector<Strip>& strips,
                                   int R, int64_t nd, int64_t c0, int64_t c1) {
  for (size_t j = 0; j < strips.size(); ++j) {
    if (strips[j].col < c0 || strips[j].col >= c1) continue;
    for (int r = 0; r < R; ++r) {
      float* out = dphi + r * nd + strips[j].col;
      simd::store16(out,
                    _mm512_add_ps(simd::load16(out, strips[j].mask),
                                  _mm512_load_ps(dphi_pack + (j * R + r) * 16)),
                    strips[j].mask);
    }
  }
}

}  // namespace

template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void
projection_backward_block512(const T* X, const float* phi, const T* dy, T* dX, float* dphi,
                             int64_t tokens, int64_t n, int64_t d, int R,
                             const StageOneRecords& rec, int64_t c0, int64_t w) {
  const int64_t nd = n * d;
  // The block's strips, segment by segment (a segment: the columns of one stream).
  std::vector<Strip> strips;
  for (int64_t c = c0; c < c0 + w;) {
    const int64_t i = c / d, end = std::min(c0 + w, (i + 1) * d);
    for (int64_t s = c; s < end; s += 16) strips.push_back({s, i, simd::lanes16(s, end)});
    c = end;
  }
  // phi's and dphi's rows of the block, packed strip by strip (R x 16 floats each): in place,
  // the R rows of a strip lie nd floats apart, a multiple of 4 KiB for the model's widths, all
  // in one L1 set; packed, a strip's rows are one contiguous 1.5 KiB.
  const size_t pack = strips.size() * size_t(R) * 16;
  thread_local std::unique_ptr<float[], core::AlignedDeleter> buf;  // grows only
  thread_local size_t cap = 0;
  if (cap < 2 * pack) {
    buf = core::aligned_array<float>(2 * pack);
    cap = 2 * pack;
  }
  float* phi_pack = buf.get();
  float* dphi_pack = buf.get() + pack;
  for (size_t j = 0; j < strips.size(); ++j)
    for (int r = 0; r < R; ++r)
      _mm512_store_ps(phi_pack + (j * R + r) * 16,
                      simd::load16(phi + r * nd + strips[j].col, strips[j].mask));
  // dphi sums over the tokens a chunk at a time: one FMA chain over all 4096 tokens of a long
  // sequence lost too many bits to cancellation (the head backward failed the suite's 1e-3
  // gate); chains of kChunk tokens added in order keep the GEMM path's accuracy. The chunks are
  // fixed in tokens, so the bits still do not depend on the blocking or the threads.
  for (int64_t c0t = 0; c0t < tokens; c0t += kChunk) {
    const int64_t c1t = std::min(tokens, c0t + kChunk);
    std::fill(dphi_pack, dphi_pack + pack, 0.f);
    int64_t t0 = c0t;
    for (; t0 + kGroup <= c1t; t0 += kGroup)
      block_tokens<kGroup>(X, dy, dX, phi_pack, dphi_pack, t0, tokens, nd, d, R, rec, strips);
    for (; t0 < c1t; ++t0)
      block_tokens<1>(X, dy, dX, phi_pack, dphi_pack, t0, tokens, nd, d, R, rec, strips);
    add_strip_sums(dphi_pack, dphi, strips, R, nd, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max());
  }
}

// The strips of all nd columns (the token path's block is the whole width).
std::vector<Strip> all_strips(int64_t n, int64_t d) {
  std::vector<Strip> strips;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = i * d; s < (i + 1) * d; s += 16)
      strips.push_back({s, i, simd::lanes16(s, (i + 1) * d)});
  return strips;
}
const std::vector<Strip>& cached_strips(int64_t n, int64_t d) {
  thread_local std::vector<Strip> strips;
  thread_local int64_t sn = -1, sd = -1;
  if (sn != n || sd != d) strips = all_strips(n, d), sn = n, sd = d;
  return strips;
}

int64_t projection_pack_floats(int64_t n, int64_t d, int R) {
  return int64_t(all_strips(n, d).size()) * R * 16;
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void
pack_phi512(const float* phi, int64_t n, int64_t d, int R, float* phi_pack) {
  const int64_t nd = n * d;
  const std::vector<Strip> strips = all_strips(n, d);
  for (size_t j = 0; j < strips.size(); ++j)
    for (int r = 0; r < R; ++r)
      _mm512_store_ps(phi_pack + (j * R + r) * 16,
                      simd::load16(phi + r * nd + strips[j].col, strips[j].mask));
}

template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void
projection_backward_tokens512(const T* X, const T* dy, T* dX, const float* phi_pack,
                              float* dphi_pack, int64_t t0, int64_t t1, int64_t tokens,
                              int64_t n, int64_t d, int R, const StageOneRecords& rec,
                              bool ahead_requested, bool overwrite) {
  const std::vector<Strip>& strips = cached_strips(n, d);
  const int64_t nd = n * d;
  int64_t t = t0;
  // The head's group functions by (ahead_requested, overwrite).
  [[maybe_unused]] auto pick = [&](auto f_next, auto f_next_ow, auto f_req, auto f_req_ow) {
    return ahead_requested ? (overwrite ? f_req_ow : f_req) : (overwrite ? f_next_ow : f_next);
  };
  // The other groups add into dX: with overwrite, onto their rows zeroed first (+0).
  auto zero_rows = [&](int64_t tz, int64_t k) {
    if (overwrite) std::fill(dX + tz * nd, dX + (tz + k) * nd, T{});
  };
  if constexpr (std::is_same_v<T, float>)
    if (R == 4 && d % 16 == 0) {
      // Skewed where the rows share L1 sets (their stride a multiple of 4 KiB) and are long
      // enough for the skew's ramp and its per-slot dphi traffic (bwd_skew.log: d = 1024 1.33x,
      // 512 1.15x, 256 1.03x, 128 0.86x; 1040, whose rows do not share sets, 0.83x).
      const bool skew = (nd * int64_t(sizeof(float))) % 4096 == 0 && d >= 512;
      // An overwritten, 64-byte aligned dX streamed (head_group_skewed's NT).
      const bool nt = overwrite && reinterpret_cast<uintptr_t>(dX) % 64 == 0;
      for (; t + kGroup <= t1; t += kGroup) {
        if (skew && nt)
          (ahead_requested ? &head_group_skewed<kGroup, 2, false, true, true>
                           : &head_group_skewed<kGroup, 2, true, true, true>)(
              X, dy, dX, phi_pack, dphi_pack, t, tokens, n, d, rec);
        else if (skew)
          pick(&head_group_skewed<kGroup, 2, true>, &head_group_skewed<kGroup, 2, true, true>,
               &head_group_skewed<kGroup, 2, false>, &head_group_skewed<kGroup, 2, false, true>)(
              X, dy, dX, phi_pack, dphi_pack, t, tokens, n, d, rec);
        else
          pick(&head_group<kGroup, false, true, T>, &head_group<kGroup, false, true, T, true>,
               &head_group<kGroup, false, false, T>, &head_group<kGroup, false, false, T, true>)(
              X, dy, dX, phi_pack, dphi_pack, t, tokens, n, d, rec);
      }
      if (nt) _mm_sfence();  // the streamed lines visible before the job ends
    }
  for (; t + kGroup <= t1; t += kGroup) {
    zero_rows(t, kGroup);
    block_tokens<kGroup, T, true>(X, dy, dX, phi_pack, dphi_pack, t, tokens, nd, d, R, rec, strips);
  }
  // Groups of 4 (the bf16 head's, mhc.cc; and a group's remainder of 4-7 tokens).
  if constexpr (std::is_same_v<T, core::bf16>)
    if (R == 4 && d % 32 == 0 && core::cpu_features().avx512_bf16) {
      const bool nt = overwrite && reinterpret_cast<uintptr_t>(dX) % 64 == 0;
      const auto group =
          nt ? (ahead_requested ? &head_group<kSmallGroup, true, false, T, true, true>
                                : &head_group<kSmallGroup, true, true, T, true, true>)
             : pick(&head_group<kSmallGroup, true, true, T>, &head_group<kSmallGroup, true, true, T, true>,
                    &head_group<kSmallGroup, true, false, T>, &head_group<kSmallGroup, true, false, T, true>);
      for (; t + kSmallGroup <= t1; t += kSmallGroup)
        group(X, dy, dX, phi_pack, dphi_pack, t, tokens, n, d, rec);
      if (nt) _mm_sfence();  // the streamed lines visible before the job ends
    }
  zero_rows(t, t1 - t);  // the rest
  for (; t + kSmallGroup <= t1; t += kSmallGroup)
    block_tokens<kSmallGroup, T, true>(X, dy, dX, phi_pack, dphi_pack, t, tokens, nd, d, R, rec, strips);
  for (; t < t1; ++t)
    block_tokens<1>(X, dy, dX, phi_pack, dphi_pack, t, tokens, nd, d, R, rec, strips);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void
add_dphi_pack512(const float* dphi_pack, float* dphi, int64_t n, int64_t d, int R, int64_t c0,
                 int64_t c1) {
  add_strip_sums(dphi_pack, dphi, cached_strips(n, d), R, n * d, c0, c1);
}

template void projection_backward_tokens512<float>(const float*, const float*, float*,
                                                   const float*, float*, int64_t, int64_t,
                                                   int64_t, int64_t, int64_t, int,
                                                   const StageOneRecords&, bool, bool);
template void projection_backward_tokens512<core::bf16>(const core::bf16*, const core::bf16*,
                                                        core::bf16*, const float*, float*,
                                                        int64_t, int64_t, int64_t, int64_t,
                                                        int64_t, int, const StageOneRecords&, bool,
                                                        bool);
template void projection_backward_block512<float>(const float*, const float*, const float*,
                                                  float*, float*, int64_t, int64_t, int64_t, int,
                                                  const StageOneRecords&, int64_t, int64_t);
template void projection_backward_block512<core::bf16>(const core::bf16*, const float*,
                                                       const core::bf16*, core::bf16*, float*,
                                                       int64_t, int64_t, int64_t, int,
                                                       const StageOneRecords&, int64_t, int64_t);

}  // namespace trex::kernels::mhc_detail
