// The kernels' built-in parameter values (tuning_builtins.h): every fixed one is a legal value of
// its parameter, and the parameter's documented "0: ..." meaning names it, so the table `trex
// kernels`/`trex aura` print and the value the kernels use agree.
#include <gtest/gtest.h>

#include <string>

#include "trex/core/cpu_features.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {
namespace {

TEST(TuningBuiltins, EveryFixedBuiltinIsLegalAndDocumented) {
  int fixed = 0;
  for (const TunableParam& p : tunable_params()) {
    const int64_t v = builtin::value(p.kernel, p.name);
    if (v == 0) continue;
    ++fixed;
    EXPECT_NO_THROW(check_param(p.kernel, p.name, v)) << p.kernel << "." << p.name;
    EXPECT_NE(std::string(p.meaning).find(std::to_string(v)), std::string::npos)
        << p.kernel << "." << p.name << " built-in " << v << " not in: " << p.meaning;
  }
  // Everything but GEMM's five, the three row kernels' stream, cross-entropy's vocab_tile,
  // kv_compress.bwd's channel_block (by ratio and head dim: kv_backward_channel_block) and the
  // five row kernels' block_elems (by shape: row_block_elems).
  EXPECT_EQ(fixed, int(tunable_params().size()) - 5 - 3 - 1 - 1 - 5);
  EXPECT_EQ(builtin::kv_backward_channel_block(512, 4), 512);
  EXPECT_EQ(builtin::kv_backward_channel_block(128, 128), builtin::kKvChannelBlock);
  EXPECT_EQ(builtin::value("gemm", "kc"), 0);
  EXPECT_EQ(builtin::value("swiglu.fwd", "no_such_param"), 0);
  EXPECT_EQ(builtin::value("no_such_kernel", "block_elems"), 0);
}

// The row kernels' block grows with the call (powers of two from 16384 to 262144 elements, at
// least 16 blocks per call); small calls keep 16384.
TEST(TuningBuiltins, RowBlockGrowsWithTheCallWithinItsBounds) {
  EXPECT_EQ(builtin::row_block_elems(4096, 4096), builtin::kLargeBlockElems);  // 64 rows
  EXPECT_EQ(builtin::row_block_elems(512, 32768), builtin::kLargeBlockElems);  // 8 rows
  EXPECT_EQ(builtin::row_block_elems(256, 4096), 65536);   // 16 blocks of 16 rows
  EXPECT_EQ(builtin::row_block_elems(300, 4096), 65536);   // 18 rows would leave 16: a power of two below
  EXPECT_EQ(builtin::row_block_elems(64, 4096), builtin::kBlockElems);
  EXPECT_EQ(builtin::row_block_elems(9, 20000), builtin::kBlockElems);
  EXPECT_EQ(builtin::row_block_elems(0, 4096), builtin::kBlockElems);
  EXPECT_EQ(builtin::row_block_elems(int64_t(1) << 24, 0), builtin::kLargeBlockElems);  // cols 0 counts as 1
  for (int64_t rows : {1, 17, 1000, 4096, 100000})
    for (int64_t cols : {1, 7, 256, 4096, 129280}) {
      const int64_t b = builtin::row_block_elems(rows, cols);
      EXPECT_GE(b, builtin::kBlockElems);
      EXPECT_LE(b, builtin::kLargeBlockElems);
      EXPECT_EQ(b & (b - 1), 0) << rows << " x " << cols;
      EXPECT_NO_THROW(check_param("swiglu.fwd", "block_elems", b));
    }
}

TEST(TuningBuiltins, MhcColumnBlockFollowsTheInstructionSetPath) {
  {
    ScopedRowIsa avx2(core::Isa::kAvx2);
    EXPECT_EQ(builtin::value("mhc.pre_bwd", "column_block"), builtin::kMhcColumnBlock);
  }
  if (core::isa_supported(core::Isa::kAvx512)) {
    EXPECT_EQ(builtin::value("mhc.head_bwd", "column_block"), builtin::kMhcFusedColumnBlock);
  }
}

// What aura measures as the head forward's built-in is what the kernel runs untuned: on AVX-512
// (n = 4, d a multiple of a line) its pipeline's 64-token blocks, not the 4 of the other paths
// (with 4 the pipeline ran at 0.71x: session 22).
TEST(TuningBuiltins, MhcHeadForwardBlockFollowsTheInstructionSetPath) {
  {
    ScopedRowIsa avx2(core::Isa::kAvx2);
    EXPECT_EQ(builtin::value("mhc.head_fwd", "block_tokens"), builtin::kMhcHeadBlockTokens);
  }
  EXPECT_EQ(builtin::value("mhc.head_bwd", "block_tokens"), builtin::kMhcHeadBlockTokens);
  if (core::isa_supported(core::Isa::kAvx512)) {
    ScopedRowIsa avx512(core::Isa::kAvx512);
    EXPECT_EQ(builtin::value("mhc.head_fwd", "block_tokens"), 64);
  }
}

// The post backward's AVX-512 tokens request the next token's rows, so it runs 64-token blocks
// there too (session 29); the post forward keeps 8.
TEST(TuningBuiltins, MhcPostBackwardBlockFollowsTheInstructionSetPath) {
  {
    ScopedRowIsa avx2(core::Isa::kAvx2);
    EXPECT_EQ(builtin::value("mhc.post_bwd", "block_tokens"), builtin::kMhcPostBlockTokens);
  }
  EXPECT_EQ(builtin::value("mhc.post_fwd", "block_tokens"), builtin::kMhcPostBlockTokens);
  if (core::isa_supported(core::Isa::kAvx512)) {
    ScopedRowIsa avx512(core::Isa::kAvx512);
    EXPECT_EQ(builtin::value("mhc.post_bwd", "block_tokens"), 64);
  }
}

TEST(TuningBuiltins, StreamingBySizeAndTheGemmSplit) {
  EXPECT_FALSE(builtin::streams_by_size(builtin::kStreamMinBytes - 1));
  EXPECT_TRUE(builtin::streams_by_size(builtin::kStreamMinBytes));
  // The longer side of C is split (MR 12, NR 32, 2 threads): squares and tall C by rows, the
  // LM head's 2048 x 8192 by columns.
  EXPECT_TRUE(builtin::gemm_splits_rows(4096, 4096, 12, 32, 2));
  EXPECT_TRUE(builtin::gemm_splits_rows(512, 256, 12, 32, 2));
  EXPECT_FALSE(builtin::gemm_splits_rows(2048, 8192, 12, 32, 2));
  // A side with fewer units than threads is split only when the other has fewer still: one NR
  // sliver (N = 20) gives the rows, one MR panel (M = 5) the columns, one of each the rows.
  EXPECT_TRUE(builtin::gemm_splits_rows(24, 20, 12, 32, 2));
  EXPECT_FALSE(builtin::gemm_splits_rows(5, 64, 12, 32, 2));
  EXPECT_TRUE(builtin::gemm_splits_rows(5, 2, 12, 32, 2));
}

}  // namespace
}  // namespace trex::kernels
