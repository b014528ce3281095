// The eager baseline: what a framework without a tuned BLAS would run.
#include "trex/kernels/gemm.h"

namespace trex::kernels {

void sgemm_reference(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                     float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0f) {
        for (int64_t p = 0; p < k; ++p) {
          float av = trans_a == Trans::kNo ? a[i * lda + p] : a[p * lda + i];
          float bv = trans_b == Trans::kNo ? b[p * ldb + j] : b[j * ldb + p];
          acc += av * bv;
        }
      }
      float& cij = c[i * ldc + j];
      // beta == 0 must not read C (it may be NaN), as in BLAS.
      cij = beta == 0.0f ? alpha * acc : alpha * acc + beta * cij;
    }
  }
}

}  // namespace trex::kernels
