// y = W x for a few tokens (decoding): plain row-by-row dot products. A GEMM with a handful of
// rows of activations would pack all of W into panels on every call, which costs more than the
// product itself (in `trex generate` packing was 57% of the time before this; in trex serve's
// batched step, 2 rows through the GEMM path took 3.5x the CPU per token of one row). Here each
// weight row is read once for all the rows of x (from memory once, then from L1 for each block
// of rows).
//
// Each product keeps sixteen partial sums in one 16-float vector (GCC's vector extension, so the
// compiler emits whole-vector loads and FMAs: written as sixteen scalar lanes, GCC 12 assembled
// every vector from scalar loads and kept the sums on the stack, and the LM head of an 8-row
// step ran at a quarter of the speed measured after this change, bench/serve_bench). The lanes
// are then added in a fixed halving order, then the tail past the last whole vector in index
// order. Blocks of several output rows (for a single row of x) or several rows of x (for a
// batch) share the loop only to keep the FMA units busy: every product is summed in the same
// order whatever the number of rows or the block it falls in, so a row computed with others has
// the same bits as the row alone (what trex serve's batching relies on). Output rows are split
// over the default pool when the work is large enough to pay for the dispatch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "trex/core/thread_pool.h"

namespace trex::model {

namespace matvec_detail {

typedef float V16 __attribute__((vector_size(64)));

inline V16 load16(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The sixteen lanes in a fixed order: halves, quarters, eighths, then the last pair.
inline float lanes_sum(V16 a) {
  float l[16];
  std::memcpy(l, &a, sizeof l);
  float h8[8], h4[4];
  for (int i = 0; i < 8; ++i) h8[i] = l[i] + l[i + 8];
  for (int i = 0; i < 4; ++i) h4[i] = h8[i] + h8[i + 4];
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// For the MO weight rows r + o * in and the NB rows x + b * in:
// y[o + b * ldy] = (r + o * in) . (x + b * in).
template <int MO, int NB>
inline void dot_block(const float* r, const float* x, int64_t in, float* y, int64_t ldy) {
  V16 acc[MO][NB];
  for (int o = 0; o < MO; ++o)
    for (int b = 0; b < NB; ++b) acc[o][b] = V16{};
  int64_t i = 0;
  for (; i + 16 <= in; i += 16) {
    V16 xv[NB];
    for (int b = 0; b < NB; ++b) xv[b] = load16(x + b * in + i);
    for (int o = 0; o < MO; ++o) {
      const V16 rv = load16(r + o * in + i);
      for (int b = 0; b < NB; ++b) acc[o][b] += rv * xv[b];
    }
  }
  for (int o = 0; o < MO; ++o)
    for (int b = 0; b < NB; ++b) {
      float s = lanes_sum(acc[o][b]);
      for (int64_t j = i; j < in; ++j) s += r[o * in + j] * x[b * in + j];
      y[o + b * ldy] = s;
    }
}

// Weight rows per block when x has several rows: 4 x 4 sums fill 16 of AVX-512's 32 vector
// registers; with 16 registers (AVX2, each sum two halves) one weight row at a time.
#ifdef __AVX512F__
constexpr int kOutBlock = 4;
#else
constexpr int kOutBlock = 1;
#endif

// Output rows [o0, o1) of every row of x: blocks of weight rows times blocks of four rows of x
// (the weight rows stay in L1 for the rows of x after the first block).
inline void rows_range(const float* w, const float* x, int64_t n, int64_t out, int64_t in,
                       float* y, int64_t o0, int64_t o1) {
  int64_t o = o0;
  if (n == 1) {
    // One row of x: four weight rows at a time, four independent sums in flight.
    for (; o + 4 <= o1; o += 4) dot_block<4, 1>(w + o * in, x, in, y + o, out);
  } else {
    for (; o + kOutBlock <= o1; o += kOutBlock) {
      int64_t b = 0;
      for (; b + 4 <= n; b += 4) dot_block<kOutBlock, 4>(w + o * in, x + b * in, in, y + b * out + o, out);
      for (; b < n; ++b) dot_block<kOutBlock, 1>(w + o * in, x + b * in, in, y + b * out + o, out);
    }
  }
  for (; o < o1; ++o) {
    int64_t b = 0;
    for (; b + 4 <= n; b += 4) dot_block<1, 4>(w + o * in, x + b * in, in, y + b * out + o, out);
    for (; b < n; ++b) dot_block<1, 1>(w + o * in, x + b * in, in, y + b * out + o, out);
  }
}

}  // namespace matvec_detail

// w [out, in] row-major, x [n, in], y [n, out] (overwritten; must not alias x or w).
inline void matvec_rows(const float* w, const float* x, int64_t n, int64_t out, int64_t in, float* y) {
  constexpr int64_t kSerialElements = int64_t(1) << 18;
  if (out * in * std::max<int64_t>(n, 1) < kSerialElements) {
    matvec_detail::rows_range(w, x, n, out, in, y, 0, out);
    return;
  }
  core::default_thread_pool().parallel_for(0, out, 64, [&](int64_t o0, int64_t o1) {
    matvec_detail::rows_range(w, x, n, out, in, y, o0, o1);
  });
}

// w [out, in] row-major, x [in], y [out] (overwritten; must not alias x or w).
inline void matvec(const float* w, const float* x, int64_t out, int64_t in, float* y) {
  matvec_rows(w, x, 1, out, in, y);
}

}  // namespace trex::model
