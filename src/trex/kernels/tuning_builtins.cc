// The built-in values of the tunable parameters by name (see tuning_builtins.h).
#include "trex/kernels/tuning_builtins.h"

#include "trex/kernels/row_isa.h"

namespace trex::kernels::builtin {

int64_t value(const std::string& kernel, const std::string& param) {
  auto starts = [&](const char* prefix) { return kernel.rfind(prefix, 0) == 0; };
  // The row kernels' block_elems depends on the call's shape (row_block_elems): 0 here.
  // kv_compress.bwd's depends on the ratio and head dim (kv_backward_channel_block): 0 here.
  if (param == "channel_block" && kernel == "kv_compress.fwd") return kKvChannelBlock;
  if (param == "query_block" && kernel == "sparse_attention.fwd") return kAttnQueryBlock;
  if (param == "chunks" && kernel == "sparse_attention.bwd") return kAttnBwdChunks;
  if (param == "block_tokens") {
    if (starts("mhc.pre_")) return kMhcPreBlockTokens;
    // The head forward's AVX-512 pipeline (n = 4 in every config, d a multiple of a line) runs
    // 64-token blocks: its prefetches request the thread's next group, which 4-token blocks
    // taken in turn by the threads made the other thread's (mhc.cc; 4 measured 0.71x).
    if (kernel == "mhc.head_fwd" && row_isa() == core::Isa::kAvx512) return 64;
    // The post backward's AVX-512 tokens request the next token's rows likewise (mhc.cc; with
    // its L2 requests, 8-token blocks measured 1.04x of main's, 64-token 1.18-1.23x CPU in early
    // runs and 1.06x CPU / 1.12x wall in the final one: 4096 x 4 x 1024, 2 threads, bf16).
    if (kernel == "mhc.post_bwd" && row_isa() == core::Isa::kAvx512) return 64;
    if (starts("mhc.post_")) return kMhcPostBlockTokens;
    if (starts("mhc.head_")) return kMhcHeadBlockTokens;
  }
  if (param == "column_block" && (kernel == "mhc.pre_bwd" || kernel == "mhc.head_bwd"))
    return row_isa() == core::Isa::kAvx512 ? kMhcFusedColumnBlock : kMhcColumnBlock;
  return 0;
}

}  // namespace trex::kernels::builtin
