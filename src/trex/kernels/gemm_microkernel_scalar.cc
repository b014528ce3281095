// Portable micro-kernel for CPUs without AVX2. std::fma rounds exactly like a vector FMA, so this
// path gives the same bits as the SIMD ones for the same KC (and lets tests check the driver on
// any machine).
#include <cmath>

#include "trex/kernels/gemm_internal.h"

namespace trex::kernels::gemm_detail {

void microkernel_scalar_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                             float alpha, float beta) {
  constexpr int kMr = kMrScalar, kNr = kNrScalar;
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < kMr; ++i)
      for (int j = 0; j < kNr; ++j) acc[i][j] = std::fma(a[i], b[j], acc[i][j]);
    a += kMr;
    b += kNr;
  }
  for (int i = 0; i < kMr; ++i)
    for (int j = 0; j < kNr; ++j) {
      float t = alpha * acc[i][j];
      c[i * ldc + j] = beta == 0.0f ? t : std::fma(beta, c[i * ldc + j], t);
    }
}

}  // namespace trex::kernels::gemm_detail
