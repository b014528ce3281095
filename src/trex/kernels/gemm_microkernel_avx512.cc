// AVX-512 micro-kernel, 12 x 32: 24 zmm accumulators (12 rows x 2 vectors), 2 zmm for the B row,
// 1 for the broadcast: 27 of 32 registers. 24 independent FMA chains cover latency 4 x two
// 512-bit FMA ports with room to spare; 14 loads per 24 FMAs stay under the load ports' rate.
// Compiled by target attribute; the driver calls it only when cpu_features says AVX-512.
#include <immintrin.h>

#include "trex/kernels/gemm_internal.h"

namespace trex::kernels::gemm_detail {

__attribute__((target("avx512f"))) void microkernel_avx512_12x32(int64_t kc, const float* a,
                                                                 const float* b, float* c,
                                                                 int64_t ldc, float alpha,
                                                                 float beta) {
  constexpr int kMr = kMrAvx512;
  // The C tile is read only in the epilogue; fetch it now so that its latency (it is often in
  // L3 or memory when the k loop is split into several KC blocks) hides behind the k loop.
  if (beta != 0.0f) {
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 31), _MM_HINT_T0);
    }
  }
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_load_ps(b);
    __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += 32;
  }
  __m512 va = _mm512_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, acc[i][0]));
      _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, acc[i][1]));
    }
  } else {
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      float* ci = c + i * ldc;
      _mm512_storeu_ps(ci, _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), _mm512_mul_ps(va, acc[i][0])));
      _mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + 16),
                                                _mm512_mul_ps(va, acc[i][1])));
    }
  }
}

namespace {

// R <= 12 rows of a full 32-column tile. kMode says where element (i, p) of A's sliver is:
// 0 a packed panel (a[p * 12 + i]; rows past R are its zero padding, not read), 1 A itself with
// rows i (a[i * lda + p]), 2 A itself transposed (a[p * lda + i]).
// With R < 12 (the bottom edge of C) it runs 2R accumulators and stores straight into C: the
// full kernel into a scratch tile did 12/R times the FMAs and then an element-by-element
// epilogue (for a 64-row product, as each expert's weight gradient is, the sixth panel is 4
// rows: an eighth of the work was padding). Modes 1 and 2 skip packing A where each A sliver
// meets only one or two B slivers (N <= 64: the experts' width blocks), so a packed copy would be
// read twice at most. kBDirect reads B where it lies (row p at b + p * ldb, B not transposed)
// instead of from a packed sliver: where a B sliver meets few A slivers (a weight gradient
// dY^T X of 64-288 rows) the copy cost more than the strided reads, which come from L2. Each
// element's FMA chain and epilogue are the full kernel's, so every mode and row count gives the
// same bits.
template <int R, int kMode, bool kBDirect>
__attribute__((target("avx512f"))) void tile_x32(int64_t kc, const float* a, int64_t lda,
                                                 const float* b, int64_t ldb, float* c,
                                                 int64_t ldc, float alpha, float beta) {
  constexpr int kMr = kMrAvx512;
  if (beta != 0.0f) {
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 31), _MM_HINT_T0);
    }
  }
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const float* row[R];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) row[i] = a + i * lda;
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = kBDirect ? _mm512_loadu_ps(b) : _mm512_load_ps(b);
    __m512 b1 = kBDirect ? _mm512_loadu_ps(b + 16) : _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      __m512 ai = _mm512_set1_ps(kMode == 1 ? row[i][p] : a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    if (kMode == 0) a += kMr;
    if (kMode == 2) a += lda;
    b += kBDirect ? ldb : 32;
  }
  __m512 va = _mm512_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, acc[i][0]));
      _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, acc[i][1]));
    }
  } else {
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      float* ci = c + i * ldc;
      _mm512_storeu_ps(ci, _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), _mm512_mul_ps(va, acc[i][0])));
      _mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + 16),
                                                _mm512_mul_ps(va, acc[i][1])));
    }
  }
}

template <int kMode, bool kBDirect>
void tile_x32_rows(int rows, int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb,
                   float* c, int64_t ldc, float alpha, float beta) {
  switch (rows) {
    case 1: return tile_x32<1, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 2: return tile_x32<2, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 3: return tile_x32<3, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 4: return tile_x32<4, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 5: return tile_x32<5, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 6: return tile_x32<6, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 7: return tile_x32<7, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 8: return tile_x32<8, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 9: return tile_x32<9, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 10: return tile_x32<10, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    case 11: return tile_x32<11, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
    default: return tile_x32<12, kMode, kBDirect>(kc, a, lda, b, ldb, c, ldc, alpha, beta);
  }
}

}  // namespace

void microkernel_avx512_rows_x32(int rows, int64_t kc, const float* a, const float* b, float* c,
                                 int64_t ldc, float alpha, float beta) {
  if (rows >= kMrAvx512) return microkernel_avx512_12x32(kc, a, b, c, ldc, alpha, beta);
  tile_x32_rows<0, false>(rows, kc, a, 0, b, 32, c, ldc, alpha, beta);
}

void microkernel_avx512_direct_x32(int rows, bool trans_a, int64_t kc, const float* a,
                                   int64_t lda, const float* b, float* c, int64_t ldc,
                                   float alpha, float beta) {
  if (trans_a)
    tile_x32_rows<2, false>(rows, kc, a, lda, b, 32, c, ldc, alpha, beta);
  else
    tile_x32_rows<1, false>(rows, kc, a, lda, b, 32, c, ldc, alpha, beta);
}

void microkernel_avx512_bdirect_x32(int rows, int64_t kc, const float* a, const float* b,
                                    int64_t ldb, float* c, int64_t ldc, float alpha,
                                    float beta) {
  tile_x32_rows<0, true>(rows, kc, a, 0, b, ldb, c, ldc, alpha, beta);
}

}  // namespace trex::kernels::gemm_detail
