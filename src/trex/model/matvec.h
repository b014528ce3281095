// y = W x for a few tokens (decoding): plain row-by-row dot products. A GEMM with a handful of
// rows of activations would pack all of W into panels on every call, which costs more than the
// product itself (in `trex generate` packing was 57% of the time before this; in trex serve's
// batched step, 2 rows through the GEMM path took 3.5x the CPU per token of one row). Here each
// weight row is read once for all the rows of x (from memory once, then from L1 for each block of
// four rows). Sixteen independent partial sums per product let the compiler use vector FMAs
// without reassociating a single sum, and every product is summed in the same order whatever the
// number of rows, so a row computed with others has the same bits as the row alone (what trex
// serve's batching relies on). Output rows are split over the default pool when the work is large
// enough to pay for the dispatch.
#pragma once

#include <algorithm>
#include <cstdint>

#include "trex/core/thread_pool.h"

namespace trex::model {

namespace matvec_detail {

// y[b * ldy] = r . x[b * in] for the NB rows of x.
template <int NB>
inline void dot_rows(const float* r, const float* x, int64_t in, float* y, int64_t ldy) {
  float acc[NB][16] = {};
  int64_t i = 0;
  for (; i + 16 <= in; i += 16)
    for (int b = 0; b < NB; ++b)
      for (int l = 0; l < 16; ++l) acc[b][l] += r[i + l] * x[b * in + i + l];
  for (int b = 0; b < NB; ++b) {
    float s = 0.f;
    for (int64_t j = i; j < in; ++j) s += r[j] * x[b * in + j];
    for (int l = 0; l < 16; ++l) s += acc[b][l];
    y[b * ldy] = s;
  }
}

}  // namespace matvec_detail

// w [out, in] row-major, x [n, in], y [n, out] (overwritten; must not alias x or w).
inline void matvec_rows(const float* w, const float* x, int64_t n, int64_t out, int64_t in, float* y) {
  auto rows = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* r = w + o * in;
      int64_t b = 0;
      for (; b + 4 <= n; b += 4) matvec_detail::dot_rows<4>(r, x + b * in, in, y + b * out + o, out);
      for (; b < n; ++b) matvec_detail::dot_rows<1>(r, x + b * in, in, y + b * out + o, out);
    }
  };
  constexpr int64_t kSerialElements = int64_t(1) << 18;
  if (out * in * std::max<int64_t>(n, 1) < kSerialElements) {
    rows(0, out);
    return;
  }
  core::default_thread_pool().parallel_for(0, out, 64, rows);
}

// w [out, in] row-major, x [in], y [out] (overwritten; must not alias x or w).
inline void matvec(const float* w, const float* x, int64_t out, int64_t in, float* y) {
  matvec_rows(w, x, 1, out, in, y);
}

}  // namespace trex::model
