// The built-in value of each tunable parameter: what a kernel does when no tuning entry sets it.
// One place for both readers: the kernels take their defaults from here, and the tuner
// (aura/target.cc) measures these as "the built-in" configuration, so the two cannot drift
// (tests/kernels/tuning_builtins_test.cc, tests/aura/target_test.cc).
#pragma once

#include <cstdint>
#include <string>

namespace trex::kernels::builtin {

// Row-blocked kernels (rmsnorm, swiglu, cross-entropy) and RoPE: elements per parallel block,
// by the call's shape (row_block_elems below): at least kBlockElems, and for a call of at least
// kMinRowBlocks such blocks, larger blocks up to kLargeBlockElems.
inline constexpr int64_t kBlockElems = 16384;
inline constexpr int64_t kLargeBlockElems = 262144;
inline constexpr int64_t kMinRowBlocks = 16;

// block_elems' built-in for a call of `rows` rows of `cols` elements (RoPE: tokens, heads x
// head_dim): the largest power of two that leaves the call kMinRowBlocks blocks, within
// [kBlockElems, kLargeBlockElems]. Where blocks of 16384 elements are one row (cross entropy's
// [512, 32768]) or a few, each block restarts the row pipelines (the next row's lines requested
// during a row's pass, RMSNorm's output pass in the next row's sum pass) and, with the threads
// taking blocks in turn, a thread's hardware prefetching runs on into the next block, which the
// other thread takes. Session 26 (Zen 4 VM, loaded 12-13), one process, CPU time, medians of 11
// alternating rounds against 16384: cross entropy [512, 32768] 1 thread 1.04-1.16x (3 runs,
// 11/11 each), 2 threads 0.95-1.16x (6 runs, 4 faster); RoPE bf16 [4096, 8, 512] 1 thread 1.04x / 1.06x,
// 2 threads 1.02x / 1.00x; RMSNorm, SwiGLU 0.98-1.02x (the same code against itself:
// 0.99-1.01x). Calls of fewer than 16 blocks of 16384 keep 16384 (small calls keep their spread
// over the threads). Rows are independent in these kernels, so the block moves no bits.
constexpr int64_t row_block_elems(int64_t rows, int64_t cols) {
  const int64_t spread = rows / kMinRowBlocks * (cols > 0 ? cols : 1);
  int64_t b = kBlockElems;
  while (b < kLargeBlockElems && 2 * b <= spread) b *= 2;
  return b;
}

// Row kernels with the store choice stream an output (mode 0, "by size") of at least this many
// bytes when its rows are 32-byte aligned (simd::use_streaming).
inline constexpr int64_t kStreamMinBytes = int64_t(8) << 20;
inline constexpr int64_t kKvChannelBlock = 64;      // kv_compress.fwd channel_block, bwd's below
// kv_compress.bwd's channel_block when none is tuned (the channel-block split; on AVX-512 rows,
// ratio != 4, from 2^18 floats per input the kernel splits by entries instead, kv_compressor.cc):
// ratio 4 one block of the whole head, so that a thread walks an entry's whole half-rows
// (session 24, one process, CPU-time medians of 11 alternating rounds, loaded 15-17: blocks of
// 64 ran 0.81x / 0.79x the whole head at [4096, 512] on 1 / 2 threads, 128 0.88x / 0.89x, 256
// 0.86x / 0.72x; at [2048, 128] 64 ran 1.02x / 1.04x, within the noise), other ratios 64.
constexpr int64_t kv_backward_channel_block(int64_t head_dim, int64_t ratio) {
  return ratio == 4 ? head_dim : kKvChannelBlock;
}
inline constexpr int64_t kAttnQueryBlock = 4;       // sparse_attention.fwd query_block
inline constexpr int64_t kAttnBwdChunks = 16;       // sparse_attention.bwd chunks (also the maximum)
inline constexpr int64_t kMhcPreBlockTokens = 16;   // mhc.pre_fwd/pre_bwd: the Sinkhorn mix lanes
inline constexpr int64_t kMhcPostBlockTokens = 8;   // mhc.post_fwd/post_bwd
inline constexpr int64_t kMhcHeadBlockTokens = 4;   // mhc.head_fwd/head_bwd
inline constexpr int64_t kMhcColumnBlock = 256;     // mhc.pre_bwd/head_bwd column_block, GEMM path
inline constexpr int64_t kMhcFusedColumnBlock = 1024;  // the same on the AVX-512 fused path

// GEMM's thread split (split = 0): each thread computes its own rows (split 1) or columns (2)
// of C and packs the whole of the operand the split does not divide (B for rows, A for
// columns), so the longer side of C is split; a side with fewer MR panels (NR slivers) than
// threads is split only when the other has as few or fewer (rows on a tie).
constexpr bool gemm_splits_rows(int64_t m, int64_t n, int64_t mr, int64_t nr, int64_t threads) {
  const int64_t m_panels = (m + mr - 1) / mr, n_panels = (n + nr - 1) / nr;
  if (m_panels < threads || n_panels < threads) return m_panels >= n_panels;
  return m >= n;
}

// Whether a row kernel's output of `bytes` streams by default (before the alignment check).
constexpr bool streams_by_size(int64_t bytes) { return bytes >= kStreamMinBytes; }

// The built-in value of (kernel, parameter) as the kernel would use it on this process's
// instruction-set path (row_isa()); 0 where the built-in depends on the call's shape or the
// machine's caches (GEMM blocking and split, the row kernels' `block_elems` (row_block_elems)
// and `stream`, cross-entropy's
// `vocab_tile` whose 0 is itself the built-in "whole row"), and for a parameter that does not
// exist.
int64_t value(const std::string& kernel, const std::string& param);

}  // namespace trex::kernels::builtin
