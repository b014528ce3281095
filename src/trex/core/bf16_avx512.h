// The AVX-512 paths of the bulk conversions in bf16.h, for tests and benchmarks (fp32_to_bf16 and
// bf16_to_fp32 pick them by best_isa()). A header of their own so that bf16.h, included almost
// everywhere, did not change. They REQUIRE isa_supported(kAvx512); fp32_to_bf16_avx512 uses the
// CPU's conversion where it has AVX512_BF16. Same bits as the scalar paths.
#pragma once

#include <cstddef>

#include "trex/core/bf16.h"

namespace trex::core {

void fp32_to_bf16_avx512(const float* src, bf16* dst, size_t n);
void bf16_to_fp32_avx512(const bf16* src, float* dst, size_t n);

}  // namespace trex::core
