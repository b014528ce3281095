// The tuned blocking of a row-blocked kernel call (tuning.h): rows per parallel block, the store
// strategy, and (cross-entropy) the vocabulary tile. Only included by kernel .cc files.
#pragma once

#include <algorithm>
#include <cstdint>

#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {

struct RowBlocking {
  int64_t grain = 1;       // rows per parallel block
  int64_t stream = 0;      // simd::use_streaming's mode
  int64_t vocab_tile = 0;  // 0: whole row
};

// The built-in: blocks of builtin::row_block_elems (16384 to 262144 elements by the call's
// shape), streaming by size, whole rows.
inline RowBlocking row_blocking(const char* kernel, int64_t rows, int64_t cols) {
  int64_t block = builtin::row_block_elems(rows, cols);
  RowBlocking b;
  if (tuning_active()) {
    ParamMap p = tuned_params(kernel, shape_class({rows, cols}));
    if (auto it = p.find("block_elems"); it != p.end() && it->second > 0) block = it->second;
    if (auto it = p.find("stream"); it != p.end()) b.stream = it->second;
    if (auto it = p.find("vocab_tile"); it != p.end()) b.vocab_tile = it->second;
  }
  b.grain = std::max<int64_t>(1, block / std::max<int64_t>(cols, 1));
  return b;
}

}  // namespace trex::kernels
