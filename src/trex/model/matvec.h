// y = W x for a few tokens (decoding): plain row-by-row dot products. A GEMM with a handful of
// rows of activations would pack all of W into panels on every call, which costs more than the
// product itself (in `trex generate` packing was 57% of the time before this; in trex serve's
// batched step, 2 rows through the GEMM path took 3.5x the CPU per token of one row). Here each
// weight row is read once for all the rows of x (from memory once, then from L1 for each block
// of rows).
//
// Each product keeps four vectors of sixteen partial sums (GCC's vector extension, so the
// compiler emits whole-vector loads and FMAs in registers: written as sixteen scalar lanes, GCC
// 12 assembled every vector from scalar loads and kept the sums on the stack, and the LM head
// over 8 rows took 2.6x the time it takes now, microbenchmark of 2026-12-04 in
// bench/results/serve_bench.md). The four are added pairwise, the lanes by halving, then the tail
// past the last whole vector in index order. Blocks of rows of x share each weight row's loads
// only: every product is summed in the same order whatever the number of rows or the block it
// falls in, so a row computed with others has the same bits as the row alone (what trex serve's
// batching relies on). Output rows are split over the default pool when the work is large
// enough to pay for the dispatch.
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

typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));
typedef float V2 __attribute__((vector_size(8)));

// The sixteen lanes in a fixed order: halves, quarters, eighths, then the last pair, each step
// one vector add (as sixteen scalar adds this cost more than the products of a 256-long row).
inline float lanes_sum(V16 a) {
  const V8 h8 = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
                __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4 h4 = __builtin_shufflevector(h8, h8, 0, 1, 2, 3) + __builtin_shufflevector(h8, h8, 4, 5, 6, 7);
  const V2 h2 = __builtin_shufflevector(h4, h4, 0, 1) + __builtin_shufflevector(h4, h4, 2, 3);
  return h2[0] + h2[1];
}

// y[b * ldy] = r . (x + b * in) for the NB rows of x. Each product keeps four vectors of
// partial sums (chunk c of 16 floats goes to sum c % 4), so four FMA chains are in flight even
// for one row; they are combined as (s0 + s1) + (s2 + s3), then the lanes, then the tail.
template <int NB>
inline void dot_block(const float* r, const float* x, int64_t in, float* y, int64_t ldy) {
  V16 acc[NB][4];
  for (int b = 0; b < NB; ++b)
    for (int k = 0; k < 4; ++k) acc[b][k] = V16{};
  int64_t i = 0;
  for (; i + 64 <= in; i += 64)
    for (int k = 0; k < 4; ++k) {
      const V16 rv = load16(r + i + 16 * k);
      for (int b = 0; b < NB; ++b) acc[b][k] += rv * load16(x + b * in + i + 16 * k);
    }
  for (int k = 0; i + 16 <= in; i += 16, ++k) {
    const V16 rv = load16(r + i);
    for (int b = 0; b < NB; ++b) acc[b][k] += rv * load16(x + b * in + i);
  }
  for (int b = 0; b < NB; ++b) {
    float s = lanes_sum((acc[b][0] + acc[b][1]) + (acc[b][2] + acc[b][3]));
    for (int64_t j = i; j < in; ++j) s += r[j] * x[b * in + j];
    y[b * ldy] = s;
  }
}

// Rows of x per block: 4 x 4 sums fill 16 of AVX-512's 32 vector registers; with 16 registers
// (AVX2, each sum two halves) one row at a time.
#ifdef __AVX512F__
constexpr int kRowBlock = 4;
#else
constexpr int kRowBlock = 1;
#endif

// Output rows [o0, o1) of every row of x. Weight rows are taken in order, so W streams from
// memory front to back (the hardware prefetcher follows one stream; interleaving four weight
// rows made a lone row 1.4x slower), and each weight row is reused from L1 for every block of
// rows of x.
inline void rows_range(const float* w, const float* x, int64_t n, int64_t out, int64_t in,
                       float* y, int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    int64_t b = 0;
    for (; b + kRowBlock <= n; b += kRowBlock)
      dot_block<kRowBlock>(w + o * in, x + b * in, in, y + b * out + o, out);
    for (; b < n; ++b) dot_block<1>(w + o * in, x + b * in, in, y + b * out + o, out);
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
