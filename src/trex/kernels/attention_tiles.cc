// See attention_tiles.h. The vector width is fixed at compile time (this library is built with
// -march=native); the scalar path handles lengths that are not a multiple of it.
//
// GCC 12 reports a false -Wmaybe-uninitialized inside its own AVX-512 headers when
// _mm512_shuffle_f32x4 (and _mm512_reduce_add_ps) is inlined: the undefined source operand of
// a masked intrinsic, GCC bug 105593. The state must be set before immintrin.h is first included.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "trex/kernels/attention_tiles.h"

#include <algorithm>
#include <cmath>

#if defined(__AVX512F__)
#include <immintrin.h>
#define TREX_TILE_WIDTH 16
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TREX_TILE_WIDTH 8
#else
#define TREX_TILE_WIDTH 1
#endif

namespace trex::kernels::attn_detail {
namespace {

#if TREX_TILE_WIDTH == 16
using V = __m512;
inline V vzero() { return _mm512_setzero_ps(); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vset(float x) { return _mm512_set1_ps(x); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
#elif TREX_TILE_WIDTH == 8
using V = __m256;
inline V vzero() { return _mm256_setzero_ps(); }
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vset(float x) { return _mm256_set1_ps(x); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline float vsum(V v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

constexpr int W = TREX_TILE_WIDTH;

#if TREX_TILE_WIDTH == 16
// The 16 sums of c[0..15] as one vector, lane 4 j + i holding the sum of c[4 i + j]: a transposed
// reduction (45 shuffles and adds for 16 sums instead of 16 scalar reductions of 7 each) whose
// tree is _mm512_reduce_add_ps's, so every sum has the same bits as before: halves of 256 bits,
// then of 128, then lanes (0, 2) and (1, 3), then the two results (IEEE addition commutes).
inline __m512 reduce16(const V c[16]) {
  V u[8], v[4], w[2];
  for (int p = 0; p < 8; ++p)  // [a.lo256 + a.hi256 | b.lo256 + b.hi256]
    u[p] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)),
                         _mm512_shuffle_f32x4(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)));
  for (int p = 0; p < 4; ++p)  // 128-bit lane g: (quad 1 + quad 0) of source 4 p + g
    v[p] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * p], u[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)),
                         _mm512_shuffle_f32x4(u[2 * p], u[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)));
  for (int p = 0; p < 2; ++p)  // in each 128-bit lane: elements 0 + 2, 1 + 3 of both sources
    w[p] = _mm512_add_ps(_mm512_shuffle_ps(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

// One 4 x 4 tile of dot products.
void dot_tile(const float* const a[4], const float* const b[4], int64_t K, float out[4][4]) {
  int64_t k = 0;
#if TREX_TILE_WIDTH == 16
  V c[16];
  for (int i = 0; i < 16; ++i) c[i] = vzero();
  for (; k + W <= K; k += W) {
    V b0 = vload(b[0] + k), b1 = vload(b[1] + k), b2 = vload(b[2] + k), b3 = vload(b[3] + k);
    // The empty asm statements keep every loaded vector in a register: GCC otherwise folds the
    // loads into the FMAs as memory operands, loading each vector four times (20 loads for 16
    // FMAs instead of 8, load-bound on Zen 4, where a 512-bit load takes both load pipes).
    asm("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3));
    for (int i = 0; i < 4; ++i) {
      V ai = vload(a[i] + k);
      asm("" : "+v"(ai));
      c[4 * i + 0] = vfma(ai, b0, c[4 * i + 0]);
      c[4 * i + 1] = vfma(ai, b1, c[4 * i + 1]);
      c[4 * i + 2] = vfma(ai, b2, c[4 * i + 2]);
      c[4 * i + 3] = vfma(ai, b3, c[4 * i + 3]);
    }
  }
  alignas(64) float r[16];
  _mm512_store_ps(r, reduce16(c));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[i][j] = r[4 * j + i];
#elif TREX_TILE_WIDTH == 8
  V c00 = vzero(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  V c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
  for (; k + W <= K; k += W) {
    V b0 = vload(b[0] + k), b1 = vload(b[1] + k), b2 = vload(b[2] + k), b3 = vload(b[3] + k);
    V a0 = vload(a[0] + k);
    c00 = vfma(a0, b0, c00), c01 = vfma(a0, b1, c01), c02 = vfma(a0, b2, c02), c03 = vfma(a0, b3, c03);
    V a1 = vload(a[1] + k);
    c10 = vfma(a1, b0, c10), c11 = vfma(a1, b1, c11), c12 = vfma(a1, b2, c12), c13 = vfma(a1, b3, c13);
    V a2 = vload(a[2] + k);
    c20 = vfma(a2, b0, c20), c21 = vfma(a2, b1, c21), c22 = vfma(a2, b2, c22), c23 = vfma(a2, b3, c23);
    V a3 = vload(a[3] + k);
    c30 = vfma(a3, b0, c30), c31 = vfma(a3, b1, c31), c32 = vfma(a3, b2, c32), c33 = vfma(a3, b3, c33);
  }
  out[0][0] = vsum(c00), out[0][1] = vsum(c01), out[0][2] = vsum(c02), out[0][3] = vsum(c03);
  out[1][0] = vsum(c10), out[1][1] = vsum(c11), out[1][2] = vsum(c12), out[1][3] = vsum(c13);
  out[2][0] = vsum(c20), out[2][1] = vsum(c21), out[2][2] = vsum(c22), out[2][3] = vsum(c23);
  out[3][0] = vsum(c30), out[3][1] = vsum(c31), out[3][2] = vsum(c32), out[3][3] = vsum(c33);
#else
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[i][j] = 0.f;
#endif
  for (; k < K; ++k)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) out[i][j] += a[i][k] * b[j][k];
}

#if TREX_TILE_WIDTH == 16
// dot_tiles for K >= 16 on AVX-512: each tile's 16 sums leave reduce16 as one vector, row i of
// the tile in lanes 4 i .. 4 i + 3 (the accumulators go in transposed, which changes only which
// lane a sum lands in: every sum has the same tree), scaled by alpha in one multiply and stored
// as four 128-bit rows, masked at the edges. The same bits as dot_tile's scalar stores, without
// 16 scalar extractions, multiplies and stores per tile.
void dot_tiles16(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b,
                 float alpha, float* C, int64_t ldc) {
  const V va = vset(alpha);
  // Keys outer, rows inner: a tile of 4 key rows (2 KiB at hd 128) serves every row group while
  // it is in L1. Rows outer streamed all N key rows once per group of 4 rows: the attention
  // kernels' 64 compressed keys (32 KiB, scattered rows of kv_comp, from L2) twice for H = 8.
  for (int64_t j0 = 0; j0 < N; j0 += 4) {
    const float* br[4];
    for (int r = 0; r < 4; ++r) br[r] = b[std::min(j0 + r, N - 1)];
    for (int64_t i0 = 0; i0 < M; i0 += 4) {
      const float* ar[4];
      for (int r = 0; r < 4; ++r) ar[r] = a[std::min(i0 + r, M - 1)];
      const int64_t rows = std::min<int64_t>(4, M - i0);
      V c[16];
      for (int i = 0; i < 16; ++i) c[i] = vzero();
      int64_t k = 0;
      for (; k + W <= K; k += W) {
        V b0 = vload(br[0] + k), b1 = vload(br[1] + k), b2 = vload(br[2] + k), b3 = vload(br[3] + k);
        asm("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3));  // see dot_tile
        for (int i = 0; i < 4; ++i) {
          V ai = vload(ar[i] + k);
          asm("" : "+v"(ai));
          // c[4 j + i] = <a_i, b_j>: reduce16 puts it in lane 4 i + j.
          c[0 + i] = vfma(ai, b0, c[0 + i]);
          c[4 + i] = vfma(ai, b1, c[4 + i]);
          c[8 + i] = vfma(ai, b2, c[8 + i]);
          c[12 + i] = vfma(ai, b3, c[12 + i]);
        }
      }
      __m512 r = _mm512_mul_ps(va, reduce16(c));
      if (k < K) {  // the scalar tail, added to each sum after its reduction as dot_tile does
        alignas(64) float t[16];
        _mm512_store_ps(t, reduce16(c));
        for (; k < K; ++k)
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) t[4 * i + j] += ar[i][k] * br[j][k];
        r = _mm512_mul_ps(va, _mm512_load_ps(t));
      }
      const __mmask8 cols = __mmask8((1u << std::min<int64_t>(4, N - j0)) - 1);
      float* dst = C + i0 * ldc + j0;
      _mm_mask_storeu_ps(dst, cols, _mm512_castps512_ps128(r));
      if (rows > 1) _mm_mask_storeu_ps(dst + ldc, cols, _mm512_extractf32x4_ps(r, 1));
      if (rows > 2) _mm_mask_storeu_ps(dst + 2 * ldc, cols, _mm512_extractf32x4_ps(r, 2));
      if (rows > 3) _mm_mask_storeu_ps(dst + 3 * ldc, cols, _mm512_extractf32x4_ps(r, 3));
    }
  }
}
#endif

}  // namespace

void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b,
               float alpha, float* C, int64_t ldc) {
#if TREX_TILE_WIDTH == 16
  if (K >= W) {
    dot_tiles16(M, N, K, a, b, alpha, C, ldc);
    return;
  }
#endif
  for (int64_t i0 = 0; i0 < M; i0 += 4) {
    const float* ar[4];
    for (int r = 0; r < 4; ++r) ar[r] = a[std::min(i0 + r, M - 1)];
    for (int64_t j0 = 0; j0 < N; j0 += 4) {
      const float* br[4];
      for (int r = 0; r < 4; ++r) br[r] = b[std::min(j0 + r, N - 1)];
      float out[4][4];
      dot_tile(ar, br, K, out);
      for (int64_t i = 0; i < std::min<int64_t>(4, M - i0); ++i)
        for (int64_t j = 0; j < std::min<int64_t>(4, N - j0); ++j)
          C[(i0 + i) * ldc + j0 + j] = alpha * out[i][j];
    }
  }
}

namespace {

#if TREX_TILE_WIDTH > 1
// Rows ir[0..R-1] (the first `rows` stored, row r at cr[r]) x NV vectors of columns from column
// e: the k loop broadcasts one A element per row. Constant bounds and guarded stores keep the
// R NV accumulators in registers (a store loop bounded by `rows` made GCC keep them on the
// stack). Every element is one FMA chain over k in order from zero, whatever R and NV.
template <int R, int NV, bool kUnitRows>
inline void outer_block(int64_t K, const float* A, int64_t si, int64_t sk, const int64_t ir[R],
                        int64_t rows, const float* const* b, int64_t e, float* const cr[R],
                        bool accumulate) {
  static_assert(R * NV == 16 || NV == 1);
  V c[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) c[r][q] = vzero();
  const float* ar[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) ar[r] = A + ir[r] * si;
  // kUnitRows: the rows' A elements at one k are consecutive (si 1, rows ir[0] + r): broadcast
  // from one pointer walking k by sk (the dK window's [tau dS; P]^T), not R pointers: with R
  // base registers and the k offset GCC ran out of registers and reloaded offsets from the stack
  // and xmm every k step (36 instructions per 16 FMAs).
  // The block's lines of C (R NV lines at the step's shapes), requested for writing before the
  // k loop, which hides their latency: the backward's key gradient rows (a token's 64 window
  // rows, 32 KiB, and its scattered compressed-entry rows) have left L1 by the next token, and
  // the loads of the adds below otherwise miss there; o (forward) and dq (backward) rows are
  // written once, from arrays larger than L2. Until session 27 the forward requested a token's
  // 64 lines of o at once before its outer_tiles call: the burst stalled on the core's miss
  // buffers (perf: the prefetchw loop ~4% of the forward); 16 lines a block, each ~1000 cycles
  // before its stores, took the forward 1.06-1.08x faster (ratios 128 and 0, CPU time, loaded).
  {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) __builtin_prefetch(cr[r] + e + q * W, 1, 3);
  }
  const float* ak = A + ir[0] * si;
  for (int64_t k = 0; k < K; ++k, ak += sk) {
    const float* bk = b[k] + e;
    V bq[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bq[q] = vload(bk + q * W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V a = vset(kUnitRows ? ak[r] : ar[r][k * sk]);
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) c[r][q] = vfma(a, bq[q], c[r][q]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float* dst = cr[r] + e;
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q)
      vstore(dst + q * W, accumulate ? vadd(vload(dst + q * W), c[r][q]) : c[r][q]);
  }
}
#endif

// Rows ir[0..R-1] of one group (the first `rows` stored) over all N columns.
template <int R, bool kUnitRows = false>
void outer_group(int64_t N, int64_t K, const float* A, int64_t si, int64_t sk, const int64_t ir[R],
                 int64_t rows, const float* const* b, float* const cr[R], bool accumulate) {
  int64_t e = 0;
#if TREX_TILE_WIDTH > 1
  constexpr int NV = 16 / R;
  for (; e + NV * W <= N; e += NV * W) outer_block<R, NV, kUnitRows>(K, A, si, sk, ir, rows, b, e, cr, accumulate);
  for (; e + W <= N; e += W) outer_block<R, 1, kUnitRows>(K, A, si, sk, ir, rows, b, e, cr, accumulate);
#endif
  for (; e < N; ++e)
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0.f;
      for (int64_t k = 0; k < K; ++k) s += A[ir[r] * si + k * sk] * b[k][e];
      float* dst = cr[r] + e;
      *dst = accumulate ? *dst + s : s;
    }
}

// outer_tiles with row i of C at crow[i]. Groups of 8 rows x 2 vectors while 8 rows are left
// (each loaded b vector serves 8 rows: a b row's pieces are read once per 8 rows, and a sweep
// over k touches 2 lines of each b row instead of 4), then groups of 4 rows x 4 vectors (the
// last repeating its last row). The same FMA chain per element either way: the same bits.
void outer_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                const float* const* b, float* const* crow, bool accumulate) {
  int64_t i0 = 0;
#if TREX_TILE_WIDTH == 16
  for (; i0 + 8 <= M; i0 += 8) {
    int64_t ir[8];
    float* cr[8];
    for (int r = 0; r < 8; ++r) ir[r] = i0 + r, cr[r] = crow[i0 + r];
    if (si == 1)
      outer_group<8, true>(N, K, A, si, sk, ir, 8, b, cr, accumulate);
    else
      outer_group<8>(N, K, A, si, sk, ir, 8, b, cr, accumulate);
  }
#endif
  for (; i0 < M; i0 += 4) {
    int64_t ir[4];
    for (int r = 0; r < 4; ++r) ir[r] = std::min(i0 + r, M - 1);
    const int64_t rows = std::min<int64_t>(4, M - i0);
    float* const cr[4] = {crow[ir[0]], crow[ir[1]], crow[ir[2]], crow[ir[3]]};
    outer_group<4>(N, K, A, si, sk, ir, rows, b, cr, accumulate);
  }
}

}  // namespace

void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                 const float* const* b, float* C, int64_t ldc, bool accumulate) {
  // Row pointers in groups of 64 rows (the per-row work is N K FMAs; the pointers are noise).
  float* crow[64];
  for (int64_t m0 = 0; m0 < M; m0 += 64) {
    const int64_t mm = std::min<int64_t>(64, M - m0);
    for (int64_t i = 0; i < mm; ++i) crow[i] = C + (m0 + i) * ldc;
    outer_rows(mm, N, K, A + m0 * si, si, sk, b, crow, accumulate);
  }
}

namespace {

// column_dots' summation order: four FMA chains over the quarters of e (quarter p is e in
// [p qk, (p + 1) qk), qk = ceil(K / 4), clipped to K), each from zero, combined as
// (q0 + q1) + (q2 + q3). One chain over all K (128 terms at the step's head dim) lost the
// PyTorch agreement tests' tolerances (AdamW loss 6.7e-5 relative after 9 steps, limit 1e-6):
// a sequential sum's error grows with its length, the dot tiles' 16 lanes + tree did not. Four
// chains give those tests' gradients smaller errors than the dot tiles (2.8e-5 against 9.2e-5
// worst), but the tests' model has head dim 16 (quarters of 4 terms). At head dim 128 (quarters
// of 32) the quarters' mean error is about 1.4x the dot tiles' (0.199 against 0.140 units of
// sum |a b| 2^-24; one chain 0.326): accepted, bounded at 1.5x by attention_tiles_test's
// ColumnDotsErrorAtHeadDim128WithinOneAndAHalfOfDotTiles. Eight chains would be about as
// accurate as the tiles (0.160 measured, session 17) but took the window scores 22-25% longer
// (more partial sums through memory): not taken (docs/kernels-attention.md, "Session 17").
inline int64_t column_quarter(int64_t K) { return (K + 3) / 4; }

#if TREX_TILE_WIDTH > 1
// One chain per (row, column) over e in [ea, eb) from zero, into c: rows ar[0..R-1] x NV
// vectors of columns from column j.
template <int R, int NV>
inline void column_chains(const float* const ar[R], const float* kT, int64_t ldk, int64_t j,
                          int64_t ea, int64_t eb, V (&c)[R][NV]) {
  static_assert(NV == 1 || NV == 2 || NV == 4);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) c[r][q] = vzero();
  const float* kj = kT + j + ea * ldk;
  for (int64_t e = ea; e < eb; ++e, kj += ldk) {
    // Every 16 steps, each row's line 32 elements ahead into L1 (the attention kernels' q and
    // d_o rows stream from L2). All R rows cross into a new line at the same step, and every
    // step until the next crossing waits on those lines: the core cannot run ahead of the miss.
    // Session 27, forward, one process alternating, CPU time, loaded: 32 ahead 1.019-1.032x
    // (ratio 0), 1.033-1.038x (128); 16 ahead 1.022x / 1.008x, 48 1.00x / 1.016x, 64 1.017x /
    // 0.994x; the same rows held in L1 (timing only) 1.075x / 1.063x.
    if ((e & 15) == 0)
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) __builtin_prefetch(ar[r] + e + 32, 0, 3);
    // Named vectors, each kept in a register by an empty asm: NV loads per R NV FMAs, not R NV
    // (see dot_tile). An array of them with an asm per element made GCC also store them all to
    // the stack every iteration (dead stores, 4 per 16 FMAs: perf showed them hot).
    V b0 = vload(kj), b1, b2, b3;
    if constexpr (NV == 4) {
      b1 = vload(kj + W);
      b2 = vload(kj + 2 * W);
      b3 = vload(kj + 3 * W);
      asm("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3));
    } else if constexpr (NV == 2) {
      b1 = vload(kj + W);
      asm("" : "+v"(b0), "+v"(b1));
    } else {
      asm("" : "+v"(b0));
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V a = vset(ar[r][e]);
      c[r][0] = vfma(a, b0, c[r][0]);
      if constexpr (NV >= 2) c[r][1] = vfma(a, b1, c[r][1]);
      if constexpr (NV == 4) {
        c[r][2] = vfma(a, b2, c[r][2]);
        c[r][3] = vfma(a, b3, c[r][3]);
      }
    }
  }
}

// Rows ar[0..R-1] (the first `rows` stored) x NV vectors of key columns from column j, in
// column_dots' order, scaled by alpha, then stored (the last vector only up to column `end`).
// The partial sums of quarters 0 and 2 wait in memory (16 more accumulators would not leave
// registers for the key vectors): 48 vector stores and 48 loads per 2048 vector FMAs at hd 128.
template <int R, int NV>
inline void column_block(int64_t K, const float* const ar[R], int64_t rows, const float* kT,
                         int64_t ldk, int64_t j, int64_t end, float alpha, float* C, int64_t ldc) {
  const int64_t qk = column_quarter(K);
  auto bound = [&](int p) { return std::min<int64_t>(K, p * qk); };
  V c[R][NV];
  alignas(64) float s01[R][NV][W], s2[R][NV][W];
  column_chains<R, NV>(ar, kT, ldk, j, bound(0), bound(1), c);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) vstore(s01[r][q], c[r][q]);
  column_chains<R, NV>(ar, kT, ldk, j, bound(1), bound(2), c);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) vstore(s01[r][q], vadd(vload(s01[r][q]), c[r][q]));
  column_chains<R, NV>(ar, kT, ldk, j, bound(2), bound(3), c);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) vstore(s2[r][q], c[r][q]);
  column_chains<R, NV>(ar, kT, ldk, j, bound(3), K, c);
  const V va = vset(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float* dst = C + r * ldc + j;
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) {
      const V sum = vadd(vload(s01[r][q]), vadd(vload(s2[r][q]), c[r][q]));
      const V x = vmul(va, sum);
      const int64_t left = end - (j + q * W);
      if (left >= W) {
        vstore(dst + q * W, x);
      } else {
        alignas(64) float tmp[W];
        vstore(tmp, x);
        for (int64_t l = 0; l < left; ++l) dst[q * W + l] = tmp[l];
      }
    }
  }
}

// Rows ar[0..R-1] (the first `rows` stored, at Ci) over all N columns: R NV = 16 accumulators
// while NV vectors of columns remain, then one vector at a time.
template <int R>
void column_group(int64_t N, int64_t K, const float* const ar[R], int64_t rows, const float* kT,
                  int64_t ldk, float alpha, float* Ci, int64_t ldc) {
  constexpr int NV = 16 / R;
  int64_t j = 0;
  for (; j + (NV - 1) * W < N; j += NV * W) column_block<R, NV>(K, ar, rows, kT, ldk, j, N, alpha, Ci, ldc);
  for (; j < N; j += W) column_block<R, 1>(K, ar, rows, kT, ldk, j, N, alpha, Ci, ldc);
}
#endif

}  // namespace

// Groups of 8 rows x 2 vectors of columns while 8 rows are left (AVX-512: each loaded key
// vector serves 8 rows, so a sweep over e reads the window's lines once for 8 heads, not once
// per 4), then groups of 4 rows x 4 vectors, the last repeating its last row. Every element is
// the same four chains either way: the same bits.
void column_dots(int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT,
                 int64_t ldk, float alpha, float* C, int64_t ldc) {
  int64_t i0 = 0;
#if TREX_TILE_WIDTH == 16
  for (; i0 + 8 <= M; i0 += 8) column_group<8>(N, K, a + i0, 8, kT, ldk, alpha, C + i0 * ldc, ldc);
#endif
  for (; i0 < M; i0 += 4) {
    const float* ar[4];
    for (int r = 0; r < 4; ++r) ar[r] = a[std::min(i0 + r, M - 1)];
    const int64_t rows = std::min<int64_t>(4, M - i0);
    float* Ci = C + i0 * ldc;
#if TREX_TILE_WIDTH > 1
    column_group<4>(N, K, ar, rows, kT, ldk, alpha, Ci, ldc);
#else
    const int64_t qk = column_quarter(K);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < N; ++j) {
        float part[4];
        for (int p = 0; p < 4; ++p) {
          float acc = 0.f;
          for (int64_t e = std::min(K, p * qk); e < std::min(K, (p + 1) * qk); ++e)
            acc = std::fma(ar[r][e], kT[e * ldk + j], acc);
          part[p] = acc;
        }
        Ci[r * ldc + j] = alpha * ((part[0] + part[1]) + (part[2] + part[3]));
      }
#endif
  }
}

void outer_tiles_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                      const float* const* b, float* const* crow, bool accumulate) {
  outer_rows(M, N, K, A, si, sk, b, crow, accumulate);
}

}  // namespace trex::kernels::attn_detail
