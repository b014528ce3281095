// Grouped GEMM for MoE experts: one call for all experts of a layer. Each group runs the full
// threaded sgemm on its own rows, so a group's bits equal a separate sgemm call's (the tests
// check this), and empty groups cost nothing.
#include <stdexcept>

#include "trex/kernels/gemm.h"

namespace trex::kernels {

namespace {

template <class TB>
void grouped(Trans trans_b, int64_t n, int64_t k, std::span<const int64_t> rows, float alpha,
             const float* a, int64_t lda, std::span<const TB* const> b, int64_t ldb, float beta,
             float* c, int64_t ldc, const GemmOptions& options) {
  if (rows.size() != b.size()) throw std::invalid_argument("grouped_sgemm: rows/b size mismatch");
  int64_t row0 = 0;
  for (size_t g = 0; g < rows.size(); ++g) {
    if (rows[g] < 0) throw std::invalid_argument("grouped_sgemm: negative group size");
    if (rows[g] > 0)
      sgemm(Trans::kNo, trans_b, rows[g], n, k, alpha, a + row0 * lda, lda, b[g], ldb, beta,
            c + row0 * ldc, ldc, options);
    row0 += rows[g];
  }
}

}  // namespace

void grouped_sgemm(Trans trans_b, int64_t n, int64_t k, std::span<const int64_t> rows,
                   float alpha, const float* a, int64_t lda, std::span<const float* const> b,
                   int64_t ldb, float beta, float* c, int64_t ldc, const GemmOptions& options) {
  grouped<float>(trans_b, n, k, rows, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

void grouped_sgemm(Trans trans_b, int64_t n, int64_t k, std::span<const int64_t> rows,
                   float alpha, const float* a, int64_t lda,
                   std::span<const core::bf16* const> b, int64_t ldb, float beta, float* c,
                   int64_t ldc, const GemmOptions& options) {
  grouped<core::bf16>(trans_b, n, k, rows, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

}  // namespace trex::kernels
