// Bulk conversions like bf16.h's fp32_to_bf16 / bf16_to_fp32 (same bits) whose output is written
// with non-temporal (streaming) stores: no read of each output line before it is written, and
// the output does not displace the caches. For outputs far larger than the last-level cache that
// nothing reads right away (the caller decides, as the row kernels do by total size: a chunk of a
// large conversion streams too). Streams on the AVX-512 paths; elsewhere the plain conversion.
// Elements before dst's first 64-byte boundary and the tail take the scalar path; the call ends
// with a store fence, so the output is visible to other threads once it returns.
#pragma once

#include <cstddef>

#include "trex/core/bf16.h"

namespace trex::core {

void fp32_to_bf16_stream(const float* src, bf16* dst, size_t n);
void bf16_to_fp32_stream(const bf16* src, float* dst, size_t n);

}  // namespace trex::core
