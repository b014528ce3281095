// y = W x for a few tokens (decoding) from a weight packed once at load: a small GEMM
// micro-kernel instead of matvec.h's row-by-row dot products.
//
// W [out, in] is stored as panels of 16 outputs: panel p holds, for each input i in order, the
// sixteen weights W[16p .. 16p + 15, i] in one 64-byte line (the last panel padded with zeros).
// The kernel keeps NP panels x NB rows of x as NP * NB vectors of sixteen sums; at each input i
// it loads the NP weight vectors once and broadcasts x[b, i] of each row into NB FMAs, so a
// weight load feeds NB FMAs and an x load feeds NP (matvec.h's kernel loads one x vector per FMA:
// at 8 rows its per-row cost was 1.5-2.8 us per 192x256 product, 35-40 GFLOP/s marginal,
// session 9 notes of issue 16).
//
// Each output's sum is one chain over i = 0, 1, ..., in - 1 from +0, in that order, whatever NP,
// NB, the block of rows a row falls in or the thread that computes it: a row computed with
// others has exactly the bits it has alone (what trex serve's batching relies on).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"

namespace trex::model {

class PackedMatrix {
 public:
  static constexpr int64_t kPanel = 16;

  PackedMatrix() = default;
  // Packs w [out, in] row-major (w is not kept).
  PackedMatrix(const float* w, int64_t out, int64_t in) : PackedMatrix(w, out, nullptr, 0, in) {}
  // Packs the matrix [top; bottom] of top [top_out, in] over bottom [bottom_out, in], both
  // row-major (neither is kept): one product then gives both matrices' outputs, row by row
  // (MoeDecode's W1 and W3 of an expert).
  PackedMatrix(const float* top, int64_t top_out, const float* bottom, int64_t bottom_out, int64_t in)
      : out_(top_out + bottom_out), in_(in) {
    const int64_t out = out_;
    const int64_t panels = (out + kPanel - 1) / kPanel;
    const size_t bytes = size_t(panels * kPanel * in) * sizeof(float);
    // 64-byte aligned so each panel row is one cache line (an unaligned 64-byte load spans two);
    // from 2 MiB on, on huge pages where granted (core/arena.cc), as the other large buffers.
    data_.reset(static_cast<float*>(core::aligned_alloc_bytes(bytes, 64)));
    float* d = data_.get();
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t j = 0; j < kPanel; ++j) {
          const int64_t o = p * kPanel + j;
          d[(p * in + i) * kPanel + j] = o < top_out ? top[o * in + i]
                                         : o < out   ? bottom[(o - top_out) * in + i]
                                                     : 0.f;
        }
  }

  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  int64_t panels() const { return (out_ + kPanel - 1) / kPanel; }
  const float* panel(int64_t p) const { return data_.get() + p * in_ * kPanel; }
  size_t bytes() const { return size_t(panels() * kPanel * in_) * sizeof(float); }

 private:
  int64_t out_ = 0, in_ = 0;
  std::unique_ptr<float[], core::AlignedDeleter> data_;
};

namespace packed_detail {

typedef float V16 __attribute__((vector_size(64)));

// NP consecutive panels (starting at panel p0) times NB rows of x, into y[b * ldy + o] for the
// outputs o < out of those panels.
template <int NP, int NB>
inline void block(const PackedMatrix& w, int64_t p0, const float* x, float* y, int64_t ldy) {
  const int64_t in = w.in();
  const float* pw = w.panel(p0);
  V16 acc[NB][NP];
  for (int b = 0; b < NB; ++b)
    for (int k = 0; k < NP; ++k) acc[b][k] = V16{};
  for (int64_t i = 0; i < in; ++i) {
    V16 wv[NP];
    for (int k = 0; k < NP; ++k) std::memcpy(&wv[k], pw + (k * in + i) * PackedMatrix::kPanel, sizeof(V16));
    for (int b = 0; b < NB; ++b) {
      const V16 xb = V16{} + x[b * in + i];
      for (int k = 0; k < NP; ++k) acc[b][k] += wv[k] * xb;
    }
  }
  const int64_t o0 = p0 * PackedMatrix::kPanel;
  const int64_t valid = std::min<int64_t>(NP * PackedMatrix::kPanel, w.out() - o0);
  for (int b = 0; b < NB; ++b) {
    float* yb = y + b * ldy + o0;
    if (valid == NP * PackedMatrix::kPanel) {
      std::memcpy(yb, acc[b], sizeof(acc[b]));
    } else {
      float tmp[NP * PackedMatrix::kPanel];
      std::memcpy(tmp, acc[b], sizeof(tmp));
      std::memcpy(yb, tmp, size_t(valid) * sizeof(float));
    }
  }
}

// Rows per block and panels per block: NB * NP sums + NP weights + one broadcast within
// AVX-512's 32 vector registers (4 x 6 + 4 + 1 = 29).
constexpr int kMaxRows = 6;
constexpr int kMaxPanels = 4;

template <int NP>
inline void rows_block(const PackedMatrix& w, int64_t p0, const float* x, int64_t nb, float* y, int64_t ldy) {
  switch (nb) {
    case 1: block<NP, 1>(w, p0, x, y, ldy); break;
    case 2: block<NP, 2>(w, p0, x, y, ldy); break;
    case 3: block<NP, 3>(w, p0, x, y, ldy); break;
    case 4: block<NP, 4>(w, p0, x, y, ldy); break;
    case 5: block<NP, 5>(w, p0, x, y, ldy); break;
    default: block<NP, 6>(w, p0, x, y, ldy); break;
  }
}

// Panels [q0, q1) of every row of x. Panels in order (W streams front to back); the rows of x
// (n * in floats, a few KB) stay in L1 across panels.
inline void panels_range(const PackedMatrix& w, const float* x, int64_t n, float* y, int64_t q0,
                         int64_t q1) {
  const int64_t in = w.in(), out = w.out();
  for (int64_t p = q0; p < q1; p += kMaxPanels) {
    const int64_t np = std::min<int64_t>(kMaxPanels, q1 - p);
    for (int64_t b = 0; b < n; b += kMaxRows) {
      const int64_t nb = std::min<int64_t>(kMaxRows, n - b);
      const float* xb = x + b * in;
      float* yb = y + b * out;
      switch (np) {
        case 1: rows_block<1>(w, p, xb, nb, yb, out); break;
        case 2: rows_block<2>(w, p, xb, nb, yb, out); break;
        case 3: rows_block<3>(w, p, xb, nb, yb, out); break;
        default: rows_block<4>(w, p, xb, nb, yb, out); break;
      }
    }
  }
}

}  // namespace packed_detail

// x [n, in], y [n, out] (overwritten; must not alias x). Panels are split over the default pool
// when the work is large enough to pay for the dispatch (the same threshold as matvec_rows).
inline void matvec_rows(const PackedMatrix& w, const float* x, int64_t n, float* y) {
  constexpr int64_t kSerialElements = int64_t(1) << 18;
  if (w.out() * w.in() * std::max<int64_t>(n, 1) < kSerialElements) {
    packed_detail::panels_range(w, x, n, y, 0, w.panels());
    return;
  }
  core::default_thread_pool().parallel_for(0, w.panels(), 4, [&](int64_t q0, int64_t q1) {
    packed_detail::panels_range(w, x, n, y, q0, q1);
  });
}

}  // namespace trex::model
