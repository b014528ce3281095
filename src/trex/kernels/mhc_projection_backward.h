// Stage 2 of the mHC pre/head backward on AVX-512, fused: for one block of columns of nd, all
// tokens in order, dphi[:, cols] += sum_t dp_t x_t[cols] and dX_t[cols] += dp_t phi[:, cols] +
// coef_t x_t[cols] + pre_ti dy_t[cols - i d] in one pass, without the fp32 copy of X, the DX
// buffer and the GEMMs' packing (mhc.cc's portable path). Internal to src/trex/kernels.
#pragma once

#include <cstddef>
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

// The same stage 2 by tokens instead of by columns (the head backward's token path, mhc.cc):
// for tokens [t0, t1) of one 256-token chunk of dphi's sums, every column of nd at once, right
// after stage 1 of those tokens while their X rows are still in the caches. phi_pack: phi packed
// by pack_phi512 (once per call of the backward); dphi_pack: the chunk's sums in the same packed
// layout (the caller zeroes it at the chunk's start and adds the chunks in order with
// add_dphi_pack512). Each element's chain is projection_backward_block512's: the same bits.
// ahead_requested: stage 1 of these tokens requested the next group's X and dy (the head's
// 4-token pass, mhc.cc), so the head's groups here do not.
// overwrite: dX's rows of these tokens get the values adding onto zeros gives, bit for bit (the
// final head's groups add onto a register of +0 instead of reading dX: +0 + v, not v, keeps the
// sign of a zero v as before; other groups zero their rows first, then add).
constexpr int64_t kDphiChunkTokens = 256;
// The most floats of packed phi and chunk sums a thread keeps between calls of the token path
// (mhc.cc dphi_pack_buffer): 4 MiB; a call that needs more allocates and frees its own.
constexpr size_t kKeptPackFloats = size_t(1) << 20;
int64_t projection_pack_floats(int64_t n, int64_t d, int R);
void pack_phi512(const float* phi, int64_t n, int64_t d, int R, float* phi_pack);
template <class T>
void projection_backward_tokens512(const T* X, const T* dy, T* dX, const float* phi_pack,
                                   float* dphi_pack, int64_t t0, int64_t t1, int64_t tokens,
                                   int64_t n, int64_t d, int R, const StageOneRecords& rec,
                                   bool ahead_requested = false, bool overwrite = false);
// dphi[r, :] += the chunk's packed sums, columns [c0, c1) (ranges split between threads).
void add_dphi_pack512(const float* dphi_pack, float* dphi, int64_t n, int64_t d, int R,
                      int64_t c0, int64_t c1);

}  // namespace trex::kernels::mhc_detail
