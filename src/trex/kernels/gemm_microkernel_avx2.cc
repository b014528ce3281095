// AVX2/FMA micro-kernel, 6 x 16: 12 ymm accumulators (6 rows x 2 vectors), 2 ymm for the B row,
// 1 for the broadcast A value: 15 of 16 registers. 12 independent FMA chains cover the FMA
// latency (4-5 cycles) times two FMA ports. Compiled for AVX2+FMA by target attribute so the
// file builds whatever the global -march; the driver calls it only when the CPU has them.
#include <immintrin.h>

#include "trex/kernels/gemm_internal.h"

namespace trex::kernels::gemm_detail {

__attribute__((target("avx2,fma"))) void microkernel_avx2_6x16(int64_t kc, const float* a,
                                                                const float* b, float* c,
                                                                int64_t ldc, float alpha,
                                                                float beta) {
  constexpr int kMr = kMrAvx2;
  // Fetch the C tile early: the epilogue's loads would otherwise stall on L3 or memory.
  if (beta != 0.0f) {
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 15), _MM_HINT_T0);
    }
  }
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    __m256 b0 = _mm256_load_ps(b);
    __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += 16;
  }
  __m256 va = _mm256_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, acc[i][0]));
      _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, acc[i][1]));
    }
  } else {
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* ci = c + i * ldc;
      _mm256_storeu_ps(ci, _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), _mm256_mul_ps(va, acc[i][0])));
      _mm256_storeu_ps(ci + 8,
                       _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), _mm256_mul_ps(va, acc[i][1])));
    }
  }
}

}  // namespace trex::kernels::gemm_detail
