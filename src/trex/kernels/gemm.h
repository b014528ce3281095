// trex's own fp32 GEMM, BLIS-style, and its eager reference.
//
// Contract (row-major, BLAS semantics): C = alpha * op(A) * op(B) + beta * C, where op(A) is
// m x k and op(B) is k x n. Element (i, p) of A is a[i*lda + p] without transpose and a[p*lda + i]
// with it; likewise for B with ldb. C is m x n with c[i*ldc + j]. Leading dimensions may exceed
// the row length (padding); nothing outside the m x n window of C is written.
//   - beta == 0: C is not read (it may hold NaN or garbage), as in BLAS.
//   - alpha == 0 or k == 0: A and B are not read; C = beta * C.
//   - A and B are never written; C must not alias A or B.
// Determinism: each C element is one sequential FMA chain over p = 0..k-1, split at fixed KC
// boundaries that depend only on the blocking (not on the thread count), then combined as
// c = fma(beta, c_old, alpha * acc). Hence results are bitwise identical for any number of
// threads, and for every micro-kernel (AVX-512, AVX2, scalar) that shares the same KC.
//
// Layers (one per file): gemm_blocking.cc derives KC/MC/NC from cache sizes, gemm_pack.cc packs
// A into MR-row panels and B into NR-column panels, gemm_microkernel_*.cc compute one MR x NR
// tile, gemm.cc holds the loops (jc over NC, pc over KC, ic over MC, macro-kernel jr/ir) and the
// threading, gemm_grouped.cc the MoE grouped GEMM, gemm_reference.cc the triple loop.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

enum class Trans { kNo, kYes };

// Cache sizes the blocking is derived from (bytes; ways of the L1 data cache).
struct CacheSizes {
  int64_t l1_bytes = 32 << 10;
  int l1_ways = 8;
  int64_t l2_bytes = 1 << 20;
  int64_t l3_bytes = 8 << 20;
};

// The block sizes of one micro-kernel on one machine. See gemm_blocking.cc for the model.
struct GemmBlocking {
  core::Isa isa = core::Isa::kScalar;
  int mr = 0, nr = 0;      // micro-tile (register block)
  int64_t kc = 0;          // depth of one packed sliver (MR x KC of A, KC x NR of B, read from L2)
  int64_t mc = 0;          // rows of the packed A block (MC x KC in L2), a multiple of MR
  int64_t nc = 0;          // columns of the packed B block (KC x NC in L3), a multiple of NR
  int split = 0;           // thread split: 0 the longer side of C, 1 rows, 2 NR column slivers
  CacheSizes caches;       // what it was derived from
  std::string explain() const;  // one line with the numbers and the formulas
};

// Cache sizes of cpu0 from /sys/devices/system/cpu/cpu0/cache (defaults where absent).
CacheSizes read_cache_sizes();

// The analytical model: pure function of the ISA's register tile and the caches.
GemmBlocking derive_gemm_blocking(core::Isa isa, const CacheSizes& caches);

// The blocking sgemm uses by default: core::best_isa() (TREX_ISA lowers it) and the sysfs caches,
// computed once on first use.
const GemmBlocking& gemm_blocking();

// A blocking with a tuning entry's parameters (tuning.h: mc, kc, nc, split, ukernel; absent or
// 0 keep `base`'s). ukernel re-derives the model for that micro-kernel first; mc and nc are
// rounded down to multiples of MR and NR (at least one). Throws InputError for an illegal value.
GemmBlocking apply_gemm_tuning(const GemmBlocking& base, const std::map<std::string, int64_t>& params);

// What sgemm uses for an m x n x k call with no explicit blocking: gemm_blocking(), with the
// active tuning's entry for kernel "gemm" and shape class shape_class({m, n, k}) applied.
GemmBlocking gemm_blocking_for(int64_t m, int64_t n, int64_t k);

struct GemmOptions {
  core::ThreadPool* pool = nullptr;         // nullptr: core::default_thread_pool()
  const GemmBlocking* blocking = nullptr;   // nullptr: gemm_blocking(); its isa must be supported
};

void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options = {});

// Mixed precision: A, B or both stored as bf16 (weights and activations of a bf16 model), C and
// every product and sum fp32. Packing widens bf16 exactly into the fp32 panels the micro-kernels
// read, so each overload gives bit for bit what sgemm gives on fp32 copies of the operands, with
// half the operand bytes read from memory. Same contract and determinism as sgemm.
void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const core::bf16* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options = {});
void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const core::bf16* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const GemmOptions& options = {});
void sgemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const core::bf16* a, int64_t lda, const core::bf16* b, int64_t ldb, float beta,
           float* c, int64_t ldc, const GemmOptions& options = {});

// The eager baseline: a plain triple loop (i, j, then p in order, fp32 accumulation), same
// contract as sgemm. Slow; for tests and as the "before" in benchmarks.
void sgemm_reference(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                     float* c, int64_t ldc);

// Grouped GEMM for MoE experts: group g owns rows[g] consecutive rows of the stacked activations
// A (sum(rows) x k, row stride lda, not transposed) and of the stacked output C (sum(rows) x n,
// row stride ldc), and its own weight b[g] (op(B) is k x n, leading dimension ldb, shared by all
// groups). Computes C_g = alpha * A_g * op(B_g) + beta * C_g for every g; empty groups are
// skipped (their b[g] may be null). Each group gives exactly the bits of a separate sgemm call.
void grouped_sgemm(Trans trans_b, int64_t n, int64_t k, std::span<const int64_t> rows,
                   float alpha, const float* a, int64_t lda, std::span<const float* const> b,
                   int64_t ldb, float beta, float* c, int64_t ldc, const GemmOptions& options = {});
// The same with bf16 expert weights (fp32 activations and output; see the mixed-precision sgemm).
void grouped_sgemm(Trans trans_b, int64_t n, int64_t k, std::span<const int64_t> rows,
                   float alpha, const float* a, int64_t lda,
                   std::span<const core::bf16* const> b, int64_t ldb, float beta, float* c,
                   int64_t ldc, const GemmOptions& options = {});

}  // namespace trex::kernels
