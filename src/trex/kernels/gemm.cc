// The GEMM loops (BLIS order): jc over NC columns, pc over KC depth (pack B), ic over MC rows
// (pack A), then the macro-kernel: jr over NR slivers of B, ir over MR slivers of A, one
// micro-kernel call per tile. Consecutive pc blocks are grouped (as many as fit one packed B
// block's budget, KC x NC floats): B is packed for the whole group, and the ic loop runs the
// group's pc blocks for each row block in turn.
//
// Threading: per (jc, pc group), one pool job packs disjoint B panels, a second computes. The
// compute job splits the rows of C into blocks that threads take in turn when there are enough
// rows (each thread packs its own A rows, so no thread waits on another), else the NR-column
// slivers (each thread packs all of the small A). The split never changes the per-element order
// of the k loop (pc blocks run in order, each a sequential FMA chain), so 1 and 2 threads give
// the same bits.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

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

struct Problem {
  const GemmBlocking* g;
  MicroKernel ukr;
  bool ta, tb;
  int64_t lda;
  float alpha;
  float* c;
  int64_t ldc;
};

// Tiles rows [i0, i0 + mc) of C (A block packed at a_packed) against NR slivers [q0, q1) of the
// packed B block (columns j0 + q*NR ...), with the block's effective beta.
void macro_kernel(const Problem& pr, const float* a_packed, const float* b_packed, int64_t kc,
                  int64_t i0, int64_t mc, int64_t j0, int64_t nc, int64_t q0, int64_t q1,
                  float beta) {
  const int mr = pr.g->mr, nr = pr.g->nr;
  alignas(64) float tile[gemm_detail::kMaxMr * gemm_detail::kMaxNr];
  for (int64_t q = q0; q < q1; ++q) {
    int64_t jr = q * nr;
    int64_t cols = std::min<int64_t>(nr, nc - jr);
    const float* bp = b_packed + q * kc * nr;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      int64_t rows = std::min<int64_t>(mr, mc - ir);
      const float* ap = a_packed + ir * kc;
      float* ct = pr.c + (i0 + ir) * pr.ldc + j0 + jr;
      if (rows == mr && cols == nr) {
        pr.ukr(kc, ap, bp, ct, pr.ldc, pr.alpha, beta);
      } else {
        // Edge tile: the full tile into a scratch (alpha 1, beta 0 keeps acc exact), then the
        // same epilogue as the micro-kernel's, element by element, on the part inside C.
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
  Problem pr{&g, microkernel_for(g), trans_a == Trans::kYes, trans_b == Trans::kYes, lda, alpha,
             c, ldc};
  const int mr = g.mr, nr = g.nr;

  const int64_t nc_max = std::min<int64_t>(g.nc, (n + nr - 1) / nr * nr);
  const int64_t kc_max = std::min<int64_t>(g.kc, k);
  // Consecutive depth blocks packed and computed together, as many as fit the packed B block's
  // budget of KC x NC floats (a narrow B, e.g. N = 512 against NC = 4096, takes several): one
  // packing job and one compute job serve them all instead of two jobs per block, and each
  // thread runs the blocks of its rows in depth order, so every element still sums the blocks
  // in order (the same bits).
  const int64_t group_depth =
      std::min<int64_t>(k, std::max<int64_t>(1, g.kc * g.nc / (kc_max * nc_max)) * g.kc);
  float* b_packed = thread_buffer(0, size_t(std::max(group_depth, kc_max) * nc_max));

  for (int64_t jc = 0; jc < n; jc += g.nc) {
    const int64_t nc = std::min<int64_t>(g.nc, n - jc);
    const int64_t n_panels = (nc + nr - 1) / nr;
    for (int64_t pg = 0; pg < k; pg += group_depth) {
      const int64_t pg_end = std::min<int64_t>(k, pg + group_depth);
      // Block pc of the group: depth kc, packed at b_block (blocks before it are full KC).
      auto block_kc = [&](int64_t pc) { return std::min<int64_t>(g.kc, k - pc); };
      auto b_block = [&](int64_t pc) { return b_packed + (pc - pg) * n_panels * nr; };
      // Later depth blocks accumulate onto what the earlier ones wrote.
      auto beta_eff = [&](int64_t pc) { return pc == 0 ? beta : 1.0f; };
      pool.run([&](int t) {
        int64_t lo = n_panels * t / nt, hi = n_panels * (t + 1) / nt;
        for (int64_t pc = pg; pc < pg_end; pc += g.kc)
          gemm_detail::pack_b(pr.tb, b, ldb, pc, block_kc(pc), jc, nc, nr, lo, hi, b_block(pc));
      });
      const int64_t m_panels = (m + mr - 1) / mr;
      const bool by_rows = g.split == 0 ? builtin::gemm_splits_rows(m_panels, nt) : g.split == 1;
      if (by_rows) {
        // Row blocks of at most MC rows, taken by threads in turn so that a busy core takes
        // fewer. The MR panels are dealt out evenly (block sizes differ by at most one panel),
        // and with several threads there are at least four blocks each and a multiple of the
        // thread count, so that on idle cores no thread waits long for the last block. (Blocks
        // of exactly MC rows left a short remainder: 2048 rows at MC 120 made 17 full blocks and
        // one of 8 rows, 9 full blocks for one thread against 8 for the other.)
        const int64_t mc_panels = std::max<int64_t>(1, g.mc / mr);
        int64_t blocks = (m_panels + mc_panels - 1) / mc_panels;
        if (nt > 1) blocks = std::max<int64_t>((blocks + nt - 1) / nt * nt, 4 * int64_t(nt));
        blocks = std::min(blocks, m_panels);
        const int64_t unit_max = (m_panels + blocks - 1) / blocks * mr;
        pool.parallel_for(0, blocks, 1, [&](int64_t u0, int64_t u1) {
          float* a_packed = thread_buffer(1, size_t(unit_max * kc_max));
          for (int64_t u = u0; u < u1; ++u) {
            const int64_t ic = m_panels * u / blocks * mr;
            const int64_t mc = std::min<int64_t>(m, m_panels * (u + 1) / blocks * mr) - ic;
            for (int64_t pc = pg; pc < pg_end; pc += g.kc) {
              const int64_t kc = block_kc(pc);
              gemm_detail::pack_a(pr.ta, a, lda, ic, mc, pc, kc, mr, a_packed);
              macro_kernel(pr, a_packed, b_block(pc), kc, ic, mc, jc, nc, 0, n_panels, beta_eff(pc));
            }
          }
        });
      } else {
        // Few rows: split the NR slivers instead, four units per thread dealt out evenly as
        // the row blocks are; each unit packs the (small) A itself, so one thread takes all
        // slivers in one unit.
        const int64_t units = nt == 1 ? 1 : std::min<int64_t>(n_panels, 4 * int64_t(nt));
        pool.parallel_for(0, units, 1, [&](int64_t u0, int64_t u1) {
          const int64_t mc_max = std::min<int64_t>(g.mc, m_panels * mr);
          float* a_packed = thread_buffer(1, size_t(mc_max * kc_max));
          const int64_t q0 = n_panels * u0 / units, q1 = n_panels * u1 / units;
          for (int64_t ic = 0; ic < m; ic += g.mc) {
            const int64_t mc = std::min<int64_t>(g.mc, m - ic);
            for (int64_t pc = pg; pc < pg_end; pc += g.kc) {
              const int64_t kc = block_kc(pc);
              gemm_detail::pack_a(pr.ta, a, lda, ic, mc, pc, kc, mr, a_packed);
              macro_kernel(pr, a_packed, b_block(pc), kc, ic, mc, jc, nc, q0, q1, beta_eff(pc));
            }
          }
        });
      }
    }
  }
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
