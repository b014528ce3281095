// y = W x for one token (decoding): a plain row-by-row dot product. A GEMM with one row of
// activations would pack all of W into panels on every call, which costs more than the product
// itself (in `trex generate` packing was 57% of the time before this); here each weight is read
// once, in its stored order. Sixteen independent partial sums per row let the compiler use
// vector FMAs without reassociating a single sum. Rows are split over the default pool when the
// matrix is large enough to pay for the dispatch.
#pragma once

#include <cstdint>

#include "trex/core/thread_pool.h"

namespace trex::model {

// w [out, in] row-major, x [in], y [out] (overwritten; must not alias x or w).
inline void matvec(const float* w, const float* x, int64_t out, int64_t in, float* y) {
  auto rows = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* r = w + o * in;
      float acc[16] = {};
      int64_t i = 0;
      for (; i + 16 <= in; i += 16)
        for (int l = 0; l < 16; ++l) acc[l] += r[i + l] * x[i + l];
      float s = 0.f;
      for (; i < in; ++i) s += r[i] * x[i];
      for (int l = 0; l < 16; ++l) s += acc[l];
      y[o] = s;
    }
  };
  constexpr int64_t kSerialElements = int64_t(1) << 18;
  if (out * in < kSerialElements) {
    rows(0, out);
    return;
  }
  core::default_thread_pool().parallel_for(0, out, 64, rows);
}

}  // namespace trex::model
