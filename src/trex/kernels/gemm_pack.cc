// Packing: copies of A and B laid out in the order the micro-kernel reads them, so its loads
// are unit-stride and aligned whatever the transposes and leading dimensions of the caller.
#include <algorithm>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "trex/core/bf16.h"
#include "trex/kernels/gemm_internal.h"

namespace trex::kernels::gemm_detail {

namespace {

// Operands are fp32 or bf16 in memory; packing widens bf16 exactly (16 zero bits appended), so
// the micro-kernels only ever see fp32 and a bf16 operand gives the bits of its fp32 copy.
inline float widen(float x) { return x; }
inline float widen(core::bf16 x) { return core::to_float(x); }

// A full panel whose R source rows each hold one packed lane (non-transposed A, transposed B):
// p-major, so the stores are contiguous and the R source rows are read as R sequential streams.
// R is a constant so the inner loop unrolls. Storing row by row instead (stride R floats) made
// packing a fifth of the run time of a 2048 x 256 x 4096 product.
template <int R, class S>
void pack_panel_rows(const S* s, int64_t ld, int64_t kc, float* d) {
  const S* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = s + i * ld;
  for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 32
    for (int i = 0; i < R; ++i) d[p * R + i] = widen(rows[i][p]);
  }
}

#if defined(__SSE2__)
// fp32 source, R a multiple of 4: the same panel by 4 x 4 transposes. Each step of 16 depths
// reads a whole 64-byte line of every one of the R rows and writes 16 x R floats; the scalar
// form above does one load and one store per element, and its R streams a large power of two
// apart (the LM head's backward: 12 rows of 32 KiB) keep their lines in the same L1 set, so
// taking each line whole before moving on matters as much as the fewer instructions. A copy:
// the panel's bits are the scalar form's.
template <int R>
void pack_panel_rows_sse(const float* s, int64_t ld, int64_t kc, float* d) {
  static_assert(R % 4 == 0);
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
#pragma GCC unroll 4
    for (int g = 0; g < R; g += 4) {
      const float* r0 = s + g * ld + p;
#pragma GCC unroll 4
      for (int q = 0; q < 16; q += 4) {
        __m128 x0 = _mm_loadu_ps(r0 + q), x1 = _mm_loadu_ps(r0 + ld + q);
        __m128 x2 = _mm_loadu_ps(r0 + 2 * ld + q), x3 = _mm_loadu_ps(r0 + 3 * ld + q);
        _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
        float* o = d + (p + q) * R + g;
        _mm_storeu_ps(o, x0);
        _mm_storeu_ps(o + R, x1);
        _mm_storeu_ps(o + 2 * R, x2);
        _mm_storeu_ps(o + 3 * R, x3);
      }
    }
  }
  for (; p < kc; ++p)
    for (int i = 0; i < R; ++i) d[p * R + i] = s[i * ld + p];
}

template <>
void pack_panel_rows<12, float>(const float* s, int64_t ld, int64_t kc, float* d) {
  pack_panel_rows_sse<12>(s, ld, kc, d);
}
template <>
void pack_panel_rows<16, float>(const float* s, int64_t ld, int64_t kc, float* d) {
  pack_panel_rows_sse<16>(s, ld, kc, d);
}
template <>
void pack_panel_rows<32, float>(const float* s, int64_t ld, int64_t kc, float* d) {
  pack_panel_rows_sse<32>(s, ld, kc, d);
}
#endif

// A full panel whose R lanes are R consecutive source elements of each depth (transposed A; B
// not transposed goes through pack_panels_cols below): R a constant, so each depth's copy is a
// few vector moves instead of the element loop with a run-time count it replaces (10% of the LM
// head's weight-gradient product was that loop when B went through it too).
template <int R, class S>
void pack_panel_cols(const S* s, int64_t ld, int64_t kc, float* d) {
  for (int64_t p = 0; p < kc; ++p) {
    const S* sp = s + p * ld;
#pragma GCC unroll 32
    for (int i = 0; i < R; ++i) d[p * R + i] = widen(sp[i]);
  }
}

// Full panels q0..q1 of a B that is not transposed (each depth's NR lanes are NR consecutive
// elements of source row p), kDepths depths at a time across all the panels: the kDepths source
// rows are read from start to end as kDepths sequential streams, and each panel gets kDepths x NR
// contiguous floats. Panel by panel (all kc depths of one panel, then the next) every depth was a
// new pair of lines ldb floats after the last, which memory served at 5.6-7.7 GB/s on the square
// products; one depth at a time across the panels, the stores went to panels kc x NR floats
// apart (32-64 KiB, one L1 set), 0.8x where B fits L2. Against panel by panel, fp32, depth 512,
// NR 32 (session 26, one thread, CPU-time medians of 21 alternating calls, 3 runs, load 10): B
// 2048 x 2048 1.29-1.37x, 4096 x 4096 1.39-1.45x, 512 x 2048 1.16-1.23x, 8192 x 512 (the LM
// head's input gradient) 1.04-1.08x, 256 x 512 (in L2) 1.20-1.28x. The bytes written are the same.
template <int R, class S>
void pack_panels_cols(const S* s, int64_t ld, int64_t kc, int64_t q0, int64_t q1, float* dst) {
  constexpr int64_t kDepths = 8;
  for (int64_t p0 = 0; p0 < kc; p0 += kDepths) {
    const int64_t depths = std::min(kDepths, kc - p0);
    for (int64_t q = q0; q < q1; ++q) {
      const S* sq = s + p0 * ld + q * R;
      float* d = dst + q * kc * R + p0 * R;
      for (int64_t p = 0; p < depths; ++p) {
        if constexpr (std::is_same_v<S, float>) {
          std::memcpy(d + p * R, sq + p * ld, R * sizeof(float));  // a few vector moves
        } else {
#pragma GCC unroll 32
          for (int i = 0; i < R; ++i) d[p * R + i] = widen(sq[p * ld + i]);
        }
      }
    }
  }
}

}  // namespace

template <class S>
void pack_a(bool trans, const S* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
            int64_t kc, int mr, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += mr) {
    int64_t rows = std::min<int64_t>(mr, mc - ir);
    float* d = dst + ir * kc;  // panel ir/mr starts after ir/mr panels of kc*mr floats
    if (trans && rows == mr && mr == 12) {
      pack_panel_cols<12, S>(a + p0 * lda + i0 + ir, lda, kc, d);
    } else if (trans && rows == mr && mr == 6) {
      pack_panel_cols<6, S>(a + p0 * lda + i0 + ir, lda, kc, d);
    } else if (trans) {
      // op(A)(i, p) = a[p*lda + i]: MR consecutive floats per p, a straight copy.
      for (int64_t p = 0; p < kc; ++p) {
        const S* s = a + (p0 + p) * lda + i0 + ir;
        for (int64_t i = 0; i < rows; ++i) d[p * mr + i] = widen(s[i]);
        for (int64_t i = rows; i < mr; ++i) d[p * mr + i] = 0.0f;
      }
    } else if (rows == mr && mr == 12) {
      pack_panel_rows<12, S>(a + (i0 + ir) * lda + p0, lda, kc, d);
    } else if (rows == mr && mr == 6) {
      pack_panel_rows<6, S>(a + (i0 + ir) * lda + p0, lda, kc, d);
    } else {
      // Edge panel (or another MR): row by row, zero rows past the edge.
      for (int64_t i = 0; i < rows; ++i) {
        const S* s = a + (i0 + ir + i) * lda + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * mr + i] = widen(s[p]);
      }
      for (int64_t i = rows; i < mr; ++i)
        for (int64_t p = 0; p < kc; ++p) d[p * mr + i] = 0.0f;
    }
  }
}

template <class S>
void pack_b(bool trans, const S* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
            int64_t nc, int nr, int64_t panel_lo, int64_t panel_hi, float* dst) {
  if (!trans && (nr == 32 || nr == 16)) {
    // The full panels 8 depths at a time across them (pack_panels_cols); the loop below takes
    // an edge panel.
    const int64_t full_hi = std::min(panel_hi, nc / nr);
    if (full_hi > panel_lo) {
      if (nr == 32)
        pack_panels_cols<32, S>(b + p0 * ldb + j0, ldb, kc, panel_lo, full_hi, dst);
      else
        pack_panels_cols<16, S>(b + p0 * ldb + j0, ldb, kc, panel_lo, full_hi, dst);
      panel_lo = full_hi;
    }
  }
  for (int64_t q = panel_lo; q < panel_hi; ++q) {
    int64_t jr = q * nr;
    int64_t cols = std::min<int64_t>(nr, nc - jr);
    float* d = dst + q * kc * nr;
    if (!trans) {
      // op(B)(p, j) = b[p*ldb + j]: NR consecutive floats per p.
      for (int64_t p = 0; p < kc; ++p) {
        const S* s = b + (p0 + p) * ldb + j0 + jr;
        for (int64_t j = 0; j < cols; ++j) d[p * nr + j] = widen(s[j]);
        for (int64_t j = cols; j < nr; ++j) d[p * nr + j] = 0.0f;
      }
    } else if (cols == nr && nr == 32) {
      pack_panel_rows<32, S>(b + (j0 + jr) * ldb + p0, ldb, kc, d);
    } else if (cols == nr && nr == 16) {
      pack_panel_rows<16, S>(b + (j0 + jr) * ldb + p0, ldb, kc, d);
    } else {
      // op(B)(p, j) = b[j*ldb + p], edge panel: read each source row contiguously.
      for (int64_t j = 0; j < cols; ++j) {
        const S* s = b + (j0 + jr + j) * ldb + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * nr + j] = widen(s[p]);
      }
      for (int64_t j = cols; j < nr; ++j)
        for (int64_t p = 0; p < kc; ++p) d[p * nr + j] = 0.0f;
    }
  }
}

template void pack_a<float>(bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int,
                            float*);
template void pack_a<core::bf16>(bool, const core::bf16*, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, int, float*);
template void pack_b<float>(bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int,
                            int64_t, int64_t, float*);
template void pack_b<core::bf16>(bool, const core::bf16*, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, int, int64_t, int64_t, float*);

}  // namespace trex::kernels::gemm_detail
