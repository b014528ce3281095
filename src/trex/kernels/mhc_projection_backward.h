// Stage 2 of the mHC pre/head backward on AVX-512, fused: for one block of columns of nd, all
// tokens in order, dphi[:, cols] += sum_t dp_t x_t[cols] and dX_t[cols] += dp_t phi[:, cols] +
// coef_t x_t[cols] + pre_ti dy_t[cols - i d] in one pass, without the fp32 copy of X, the DX
// buffer and the GEMMs' packing (mhc.cc's portable path). Internal to src/trex/kernels.
#pragma once

#include <cstdint>

namespace trex::kernels::mhc_detail {

// The per-token record of stage 1 (mhc.cc's PreBackLayout): dp [R] at rec + dp_at, the RMS
// coefficient at rec + coef_at, the gates w [n] at rec + pre_at; records per_token floats apart.
struct StageOneRecords {
  const float* base;
  int64_t per_token, dp_at, coef_at, pre_at;
};

// Columns [c0, c0 + w) of nd = n d, for tokens [0, tokens). dphi's block is accumulated onto
// (the caller zeroes it); dX is added onto. Each element of dphi is a sum of FMA chains over
// fixed chunks of 256 tokens, added in order; each element of dX the chain of the portable
// path's GEMM (over r in order), then (DX + coef x) + pre dy; so results depend neither on the
// thread count nor on the blocking. Only call where row_isa() is AVX-512.
template <class T>
void projection_backward_block512(const T* X, const float* phi, const T* dy, T* dX, float* dphi,
                                  int64_t tokens, int64_t n, int64_t d, int R,
                                  const StageOneRecords& rec, int64_t c0, int64_t w);

}  // namespace trex::kernels::mhc_detail
