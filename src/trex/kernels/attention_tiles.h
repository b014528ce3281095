// Register-tiled small matrix products for the sparse attention kernels, over rows given by
// pointers (the keys of one query are scattered rows of kv and kv_comp; gathering them into a
// block and packing it for a GEMM would move more bytes than the products compute on).
//   dot_tiles:   C[i][j] = alpha <a_i, b_j>           (S = tau Q K^T, dP = dO K^T)
//   column_dots: the same with the keys as columns of a transposed block (no reduction)
//   outer_tiles: C_i (+)= sum_k A(i, k) b_k           (O = P K, dQ = dS K, dK = dS^T Q + P^T dO)
// Rows are fp32 of length K (dot) or N (outer), any alignment. Tiles hold 16 vector
// accumulators, AVX-512 when compiled for it, else AVX2, else scalar: 4 x 4, and for
// column_dots and outer_tiles on AVX-512 8 rows x 2 vectors while 8 rows are left (each loaded
// key vector then serves 8 heads); edge tiles repeat the last row and drop its results. The
// tile shape never changes an element's summation order.
#pragma once

#include <cstdint>

namespace trex::kernels::attn_detail {

// C is M x N with row stride ldc.
void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b,
               float alpha, float* C, int64_t ldc);

// C[i][j] = alpha <a_i, column j of kT> for j < N, kT row-major [K][ldk] (keys as columns, e.g.
// a transposed run of consecutive keys): per element four FMA chains, one over each quarter
// of k (quarter p: k in [p qk, (p + 1) qk) clipped to K, qk = ceil(K / 4)) in order from zero,
// combined as (q0 + q1) + (q2 + q3), then alpha times it; the same on every ISA path. Reads
// columns up to N rounded up to 16 (the caller pads kT's rows: the extra columns need only be
// readable).
void column_dots(int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT,
                 int64_t ldk, float alpha, float* C, int64_t ldc);

// A(i, k) = A[i * si + k * sk]; b[k] is a row of N floats; C_i = C + i * ldc. accumulate: add
// to C instead of overwriting it. Each tile requests its lines of C for writing before its
// products (the callers' o, dq and key-gradient rows are not in L1).
void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                 const float* const* b, float* C, int64_t ldc, bool accumulate);

// outer_tiles with row i of C at crow[i] (scattered rows, e.g. compressed entries' gradients).
void outer_tiles_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                      const float* const* b, float* const* crow, bool accumulate);

}  // namespace trex::kernels::attn_detail
