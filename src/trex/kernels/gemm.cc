// The GEMM loops (BLIS order): jc over NC columns, pc over KC depth (pack B), ic over MC rows
// (pack A), then the macro-kernel: jr over NR slivers of B, ir over MR slivers of A, one
// micro-kernel call per tile. Consecutive pc blocks are grouped (as many as fit one packed B
// block's budget, KC x NC floats): B is packed for the whole group, and the ic loop runs the
// group's pc blocks for each row block in turn.
//
// Threading: one pool job per call, in one contiguous part of C's rows or columns per thread;
// the thread that takes a part runs these loops on it with its own pack buffers (gemm_driver
// says why). The split never changes the
// per-element order of the k loop (pc blocks run in order, each a sequential FMA chain), so 1
// and 2 threads give the same bits.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "trex/core/trace.h"
#include "trex/core/arena.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/gemm_internal.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {
namespace {

using gemm_detail::MicroKernel;

MicroKernel microkernel_for(const GemmBlocking& g) {
  switch (g.isa) {
    case core::Isa::kAvx512: return gemm_detail::microkernel_avx512_12x32;
    case core::Isa::kAvx2: return gemm_detail::microkernel_avx2_6x16;
    default: return gemm_detail::microkernel_scalar_6x16;
  }
}

// A buffer per thread that only grows, so steady-state calls neither allocate nor page-fault.
float* thread_buffer(int slot, size_t floats) {
  struct Buf {
    std::unique_ptr<float[], core::AlignedDeleter> p;
    size_t n = 0;
  };
  thread_local Buf bufs[2];
  Buf& b = bufs[slot];
  if (b.n < floats) {
    b.p = core::aligned_array<float>(floats);
    b.n = floats;
  }
  return b.p.get();
}

// C = beta * C over the m x n window (alpha == 0 or k == 0); beta == 0 does not read C.
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

gemm_detail::RowsKernel rows_kernel_for(const GemmBlocking& g) {
  return g.isa == core::Isa::kAvx512 ? gemm_detail::microkernel_avx512_rows_x32 : nullptr;
}

gemm_detail::DirectKernel direct_kernel_for(const GemmBlocking& g) {
  return g.isa == core::Isa::kAvx512 ? gemm_detail::microkernel_avx512_direct_x32 : nullptr;
}

gemm_detail::BDirectKernel bdirect_kernel_for(const GemmBlocking& g) {
  return g.isa == core::Isa::kAvx512 ? gemm_detail::microkernel_avx512_bdirect_x32 : nullptr;
}

struct Problem {
  const GemmBlocking* g;
  MicroKernel ukr;
  gemm_detail::RowsKernel ukr_rows;
  gemm_detail::DirectKernel ukr_direct;
  gemm_detail::BDirectKernel ukr_bdirect;
  int64_t ldb_direct;  // > 0: b_packed is B itself (not transposed) with this row stride
  bool ta, tb;
  int64_t lda;
  float alpha;
  float* c;
  int64_t ldc;
};

// Tiles rows [i0, i0 + mc) of C (A block packed at a_packed, or with a_direct unpacked: fp32
// A at op(A)(i0, pc)) against NR slivers [q0, q1) of the packed B block (columns j0 + q*NR ...),
// with the block's effective beta.
void macro_kernel(const Problem& pr, const float* a_packed, const float* a_direct,
                  const float* b_packed, int64_t kc, int64_t i0, int64_t mc, int64_t j0,
                  int64_t nc, int64_t q0, int64_t q1, float beta) {
  const int mr = pr.g->mr, nr = pr.g->nr;
  alignas(64) float tile[gemm_detail::kMaxMr * gemm_detail::kMaxNr];
  for (int64_t q = q0; q < q1; ++q) {
    int64_t jr = q * nr;
    int64_t cols = std::min<int64_t>(nr, nc - jr);
    const float* bp = pr.ldb_direct ? b_packed + jr : b_packed + q * kc * nr;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      int64_t rows = std::min<int64_t>(mr, mc - ir);
      float* ct = pr.c + (i0 + ir) * pr.ldc + j0 + jr;
      const float* ad = a_direct ? a_direct + (pr.ta ? ir : ir * pr.lda) : nullptr;
      if (ad && cols == nr) {
        pr.ukr_direct(int(rows), pr.ta, kc, ad, pr.lda, bp, ct, pr.ldc, pr.alpha, beta);
        continue;
      }
      const float* ap = a_packed + ir * kc;
      if (pr.ldb_direct) {  // only with packed A and full slivers (gemm_serial)
        pr.ukr_bdirect(int(rows), kc, ap, bp, pr.ldb_direct, ct, pr.ldc, pr.alpha, beta);
        continue;
      }
      if (!ad && rows == mr && cols == nr) {
        pr.ukr(kc, ap, bp, ct, pr.ldc, pr.alpha, beta);
      } else if (!ad && cols == nr && pr.ukr_rows) {
        pr.ukr_rows(int(rows), kc, ap, bp, ct, pr.ldc, pr.alpha, beta);
      } else {
        // Edge tile: the full tile into a scratch (alpha 1, beta 0 keeps acc exact), then the
        // same epilogue as the micro-kernel's, element by element, on the part inside C.
        if (ad)
          pr.ukr_direct(int(rows), pr.ta, kc, ad, pr.lda, bp, tile, nr, 1.0f, 0.0f);
        else
          pr.ukr(kc, ap, bp, tile, nr, 1.0f, 0.0f);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            float t = pr.alpha * tile[i * nr + j];
            float& cij = ct[i * pr.ldc + j];
            cij = beta == 0.0f ? t : std::fma(beta, cij, t);
          }
      }
    }
  }
}

// One thread's GEMM on its part of C (the pointers already offset to it): the BLIS loops with
// this thread's own pack buffers. Row blocks of at most MC rows, the MR panels dealt out evenly
// (sizes differ by at most one panel).
template <class TA, class TB>
void gemm_serial(const Problem& pr, const TA* a, const TB* b, int64_t ldb, int64_t m, int64_t n,
                 int64_t k, float beta, float* c) {
  const GemmBlocking& g = *pr.g;
  const int mr = g.mr, nr = g.nr;
  Problem p = pr;
  p.c = c;
  const int64_t nc_max = std::min<int64_t>(g.nc, (n + nr - 1) / nr * nr);
  const int64_t kc_max = std::min<int64_t>(g.kc, k);
  // Consecutive depth blocks packed together, as many as fit the packed B block's budget of
  // KC x NC floats (a narrow B, e.g. N = 512 against NC = 4096, takes several); the row blocks
  // run the group's blocks in depth order, so every element still sums them in order.
  const int64_t group_depth =
      std::min<int64_t>(k, std::max<int64_t>(1, g.kc * g.nc / (kc_max * nc_max)) * g.kc);
  const int64_t m_panels = (m + mr - 1) / mr;
  const int64_t blocks = (m_panels + std::max<int64_t>(1, g.mc / mr) - 1) / std::max<int64_t>(1, g.mc / mr);
  const int64_t block_max = (m_panels + blocks - 1) / blocks * mr;
  float* b_packed = thread_buffer(0, size_t(std::max(group_depth, kc_max) * nc_max));
  float* a_packed = thread_buffer(1, size_t(block_max * kc_max));
  // fp32 A read in place when each of its slivers meets few B slivers (see the direct kernel).
  const bool direct = p.ukr_direct && (n + nr - 1) / nr <= gemm_detail::kDirectMaxSlivers;
  // fp32 B (not transposed) read in place when each of its slivers meets few A slivers (a
  // product of up to 288 rows: the weight gradients dW = dY^T X of experts, shared expert and
  // attention projections) and every sliver is full.
  bool direct_b = false;
  if constexpr (std::is_same_v<TB, float>)
    direct_b = !direct && p.ukr_bdirect && !p.tb && n % nr == 0 &&
               m_panels <= gemm_detail::kBDirectMaxSlivers;
  if (direct_b) p.ldb_direct = ldb;
  for (int64_t jc = 0; jc < n; jc += g.nc) {
    const int64_t nc = std::min<int64_t>(g.nc, n - jc);
    const int64_t n_panels = (nc + nr - 1) / nr;
    for (int64_t pg = 0; pg < k; pg += group_depth) {
      const int64_t pg_end = std::min<int64_t>(k, pg + group_depth);
      auto block_kc = [&](int64_t pc) { return std::min<int64_t>(g.kc, k - pc); };
      auto b_block = [&](int64_t pc) { return b_packed + (pc - pg) * n_panels * nr; };
      if (!direct_b)
        for (int64_t pc = pg; pc < pg_end; pc += g.kc)
          gemm_detail::pack_b(p.tb, b, ldb, pc, block_kc(pc), jc, nc, nr, 0, n_panels,
                              b_block(pc));
      for (int64_t u = 0; u < blocks; ++u) {
        const int64_t ic = m_panels * u / blocks * mr;
        const int64_t mc = std::min<int64_t>(m, m_panels * (u + 1) / blocks * mr) - ic;
        for (int64_t pc = pg; pc < pg_end; pc += g.kc) {
          const float* a_direct = nullptr;
          if constexpr (std::is_same_v<TA, float>)
            if (direct) a_direct = p.ta ? a + pc * p.lda + ic : a + ic * p.lda + pc;
          if (!a_direct) gemm_detail::pack_a(p.ta, a, p.lda, ic, mc, pc, block_kc(pc), mr, a_packed);
          // Later depth blocks accumulate onto what the earlier ones wrote.
          const float* bb = b_block(pc);
          if constexpr (std::is_same_v<TB, float>)
            if (direct_b) bb = b + pc * ldb + jc;
          macro_kernel(p, a_packed, a_direct, bb, block_kc(pc), ic, mc, jc, nc, 0, n_panels,
                       pc == 0 ? beta : 1.0f);
        }
      }
    }
  }
}

// The driver for every operand type: TA and TB are float or core::bf16, widened by the packing.
template <class TA, class TB>
void gemm_driver(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const TA* a, int64_t lda, const TB* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, const GemmOptions& options) {
  if (m <= 0 || n <= 0) return;
  if (alpha == 0.0f || k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  // For the roofline of `trex profile analyze`: A and B read once, C written (and read if beta).
  core::trace_count(2.0 * double(m) * double(n) * double(k),
                    double(m * k) * sizeof(TA) + double(k * n) * sizeof(TB) +
                        double(m * n) * 4.0 * (beta != 0.0f ? 2 : 1));
  const GemmBlocking g = options.blocking ? *options.blocking : gemm_blocking_for(m, n, k);
  if (!core::isa_supported(g.isa)) throw std::invalid_argument("sgemm: blocking ISA unsupported");
  core::ThreadPool& pool = options.pool ? *options.pool : core::default_thread_pool();
  const int nt = pool.num_threads();
  const bool ta = trans_a == Trans::kYes, tb = trans_b == Trans::kYes;
  const Problem pr{&g, microkernel_for(g), rows_kernel_for(g), direct_kernel_for(g),
                   bdirect_kernel_for(g), 0, ta, tb, lda, alpha, c, ldc};
  if (nt == 1 || pool.running_here()) {
    gemm_serial(pr, a, b, ldb, m, n, k, beta, c);
    return;
  }
  // Each thread computes a contiguous part of C on its own, start to end, with its own packed
  // A and B: one pool job per call and nothing shared. Packed data shared between the cores
  // cost more than it saved: on the 2-core EPYC a buffer written by one core reads on the other
  // at memory speed (25 GB/s against 75 from its own caches), and packing into lines the other
  // core holds waits on its copies, so packing half of a shared B took 6x the whole B on one
  // thread (256-row expert shapes), and the join after each depth group waited ~5% of a 4096^3
  // product. The price is one operand packed by every thread: the row split packs all of B on
  // each thread, the column split all of A, so it splits the longer of M and N.
  const bool by_rows =
      g.split == 0 ? builtin::gemm_splits_rows(m, n, g.mr, g.nr, nt) : g.split == 1;
  const int64_t unit = by_rows ? g.mr : g.nr;
  const int64_t units = ((by_rows ? m : n) + unit - 1) / unit;
  // The nt parts go to whichever threads come (run_dynamic): a worker that wakes after the
  // caller's part leaves its part to the caller instead of making it wait for the wake-up. A
  // part's product does not depend on the thread that computes it: the same bits either way.
  std::atomic<int> next_part{0};
  pool.run_dynamic([&](int) {
    for (int t; (t = next_part.fetch_add(1, std::memory_order_relaxed)) < nt;) {
      // MR panels (or NR slivers) dealt out evenly: the parts differ by at most one unit.
      const int64_t lo = std::min(by_rows ? m : n, units * t / nt * unit);
      const int64_t hi = std::min(by_rows ? m : n, units * (t + 1) / nt * unit);
      if (lo >= hi) continue;
      if (by_rows)
        gemm_serial(pr, a + (ta ? lo : lo * lda), b, ldb, hi - lo, n, k, beta, c + lo * ldc);
      else
        gemm_serial(pr, a, b + (tb ? lo * ldb : lo), ldb, m, hi - lo, k, beta, c + lo);
    }
  });
}

}  // namespace

void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options) {
  gemm_driver(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const core::bf16* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options) {
  gemm_driver(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const core::bf16* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options) {
  gemm_driver(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const core::bf16* a, int64_t lda, const core::bf16* b, int64_t ldb, float beta,
           float* c, int64_t ldc, const GemmOptions& options) {
  gemm_driver(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
}

}  // namespace trex::kernels
