// Pieces shared by the GEMM layers; not part of the public API.
#pragma once

#include <cstdint>

#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"

namespace trex::kernels::gemm_detail {

// One MR x NR tile: acc = sum_p a_packed[p*MR + i] * b_packed[p*NR + j] as a sequential FMA chain
// per element, then c[i*ldc + j] = fma(beta, c, alpha * acc), or alpha * acc when beta == 0 (C is
// then not read). a_packed and b_packed are 64-byte aligned.
using MicroKernel = void (*)(int64_t kc, const float* a_packed, const float* b_packed, float* c,
                             int64_t ldc, float alpha, float beta);

// MR and NR of each path (the blocking model reads them, the driver checks them).
inline constexpr int kMrAvx2 = 6, kNrAvx2 = 16;
inline constexpr int kMrAvx512 = 12, kNrAvx512 = 32;
inline constexpr int kMrScalar = 6, kNrScalar = 16;
inline constexpr int kMaxMr = 12, kMaxNr = 32;

void microkernel_avx2_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                           float alpha, float beta);
void microkernel_avx512_12x32(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                              float alpha, float beta);
// The first `rows` (1 to MR) rows of an MR x NR tile, same contract and bits as the full kernel
// (A panel of stride MR): the bottom edge of C without the padding rows' work. nullptr for a
// path without one (its edge tiles go through a scratch tile).
using RowsKernel = void (*)(int rows, int64_t kc, const float* a_packed, const float* b_packed,
                            float* c, int64_t ldc, float alpha, float beta);
void microkernel_avx512_rows_x32(int rows, int64_t kc, const float* a, const float* b, float* c,
                                 int64_t ldc, float alpha, float beta);
// The same tile with A read where it lies instead of from a packed panel: rows i of A at
// a + i * lda (trans_a false) or lanes i at a + p * lda + i (trans_a true); fp32 A only.
using DirectKernel = void (*)(int rows, bool trans_a, int64_t kc, const float* a, int64_t lda,
                              const float* b_packed, float* c, int64_t ldc, float alpha,
                              float beta);
void microkernel_avx512_direct_x32(int rows, bool trans_a, int64_t kc, const float* a,
                                   int64_t lda, const float* b, float* c, int64_t ldc,
                                   float alpha, float beta);
// Packed A (stride MR) against B read where it lies: op(B)(p, j) = b[p * ldb + j] (B not
// transposed, fp32, all 32 columns inside B).
using BDirectKernel = void (*)(int rows, int64_t kc, const float* a_packed, const float* b,
                               int64_t ldb, float* c, int64_t ldc, float alpha, float beta);
void microkernel_avx512_bdirect_x32(int rows, int64_t kc, const float* a, const float* b,
                                    int64_t ldb, float* c, int64_t ldc, float alpha, float beta);
// A B sliver meets at most this many A slivers before B is read unpacked (bdirect kernel):
// measured 1.03-1.24x on the TN weight-gradient products of 64-256 rows (session 21).
inline constexpr int64_t kBDirectMaxSlivers = 24;
// A sliver meets at most this many B slivers before A is read unpacked (direct kernel).
inline constexpr int64_t kDirectMaxSlivers = 2;
void microkernel_scalar_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                             float alpha, float beta);

// Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) into ceil(mc/MR) panels, each kc x MR
// (p-major, MR values per p), rows past mc zero-filled. S is float or core::bf16 (widened).
template <class S>
void pack_a(bool trans, const S* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
            int64_t kc, int mr, float* dst);

// Packs depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into ceil(nc/NR) panels, each kc x NR
// (p-major, NR values per p), columns past nc zero-filled. Only panels [panel_lo, panel_hi) are
// written (so threads can split the work); panel q lands at dst + q*kc*NR.
template <class S>
void pack_b(bool trans, const S* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
            int64_t nc, int nr, int64_t panel_lo, int64_t panel_hi, float* dst);

}  // namespace trex::kernels::gemm_detail
