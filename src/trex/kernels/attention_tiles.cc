// See attention_tiles.h. The vector width is fixed at compile time (this library is built with
// -march=native); the scalar path handles lengths that are not a multiple of it.
//
// GCC 12 reports a false -Wmaybe-uninitialized inside its own AVX-512 headers when
// _mm512_reduce_add_ps is inlined (the undefined source operand of a masked extract; GCC
// bug 105593). The state must be set before immintrin.h is first included.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "trex/kernels/attention_tiles.h"

#include <algorithm>

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
inline float vsum(V v) { return _mm512_reduce_add_ps(v); }
#elif TREX_TILE_WIDTH == 8
using V = __m256;
inline V vzero() { return _mm256_setzero_ps(); }
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vset(float x) { return _mm256_set1_ps(x); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline float vsum(V v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

constexpr int W = TREX_TILE_WIDTH;

// One 4 x 4 tile of dot products.
void dot_tile(const float* const a[4], const float* const b[4], int64_t K, float out[4][4]) {
  int64_t k = 0;
#if TREX_TILE_WIDTH > 1
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

}  // namespace

void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b,
               float alpha, float* C, int64_t ldc) {
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

void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                 const float* const* b, float* C, int64_t ldc, bool accumulate) {
  for (int64_t i0 = 0; i0 < M; i0 += 4) {
    int64_t ir[4];
    for (int r = 0; r < 4; ++r) ir[r] = std::min(i0 + r, M - 1);
    const int64_t rows = std::min<int64_t>(4, M - i0);
    int64_t e = 0;
#if TREX_TILE_WIDTH > 1
    // 4 rows x 4 vectors of columns per tile; the k loop broadcasts one A element per row.
    for (; e + 4 * W <= N; e += 4 * W) {
      V c[4][4];
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) c[r][q] = vzero();
      for (int64_t k = 0; k < K; ++k) {
        const float* bk = b[k] + e;
        V b0 = vload(bk), b1 = vload(bk + W), b2 = vload(bk + 2 * W), b3 = vload(bk + 3 * W);
        for (int r = 0; r < 4; ++r) {
          V ar = vset(A[ir[r] * si + k * sk]);
          c[r][0] = vfma(ar, b0, c[r][0]);
          c[r][1] = vfma(ar, b1, c[r][1]);
          c[r][2] = vfma(ar, b2, c[r][2]);
          c[r][3] = vfma(ar, b3, c[r][3]);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int q = 0; q < 4; ++q) {
          float* dst = C + (i0 + r) * ldc + e + q * W;
          vstore(dst, accumulate ? vadd(vload(dst), c[r][q]) : c[r][q]);
        }
    }
    for (; e + W <= N; e += W) {
      V c[4] = {vzero(), vzero(), vzero(), vzero()};
      for (int64_t k = 0; k < K; ++k) {
        V bk = vload(b[k] + e);
        for (int r = 0; r < 4; ++r) c[r] = vfma(vset(A[ir[r] * si + k * sk]), bk, c[r]);
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* dst = C + (i0 + r) * ldc + e;
        vstore(dst, accumulate ? vadd(vload(dst), c[r]) : c[r]);
      }
    }
#endif
    for (; e < N; ++e)
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0.f;
        for (int64_t k = 0; k < K; ++k) s += A[ir[r] * si + k * sk] * b[k][e];
        float* dst = C + (i0 + r) * ldc + e;
        *dst = accumulate ? *dst + s : s;
      }
  }
}

}  // namespace trex::kernels::attn_detail
