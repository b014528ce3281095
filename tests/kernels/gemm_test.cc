// trex sgemm against the triple-loop reference and OpenBLAS, gated like KernelBench candidates:
// outputs pre-poisoned with NaN where beta == 0 (so a kernel that reads C fails), inputs compared
// bitwise with copies after the call, padding beyond the m x n window of C left untouched.
//
// Tolerance: sgemm, the reference and OpenBLAS each sum k products in fp32 in their own order,
// so each is within k*eps*sum_p |a_ip||b_pj| of the exact value (plus an eps-sized epilogue
// term). Two of them differ by at most twice that: tol_ij = 2 (k + 2) eps (|alpha| sum_p |a||b| +
// |beta| |c_ij|), computed per element in double. A wrong index or a dropped term costs about
// max|a||b|, far above this for the shapes here.
#include <gtest/gtest.h>

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"

namespace trex::kernels {
namespace {

struct Shape {
  int64_t m, n, k;
};

struct Mats {
  int64_t m, n, k, lda, ldb, ldc;
  bool ta, tb;
  std::vector<float> a, b, c;
};

Mats make(Shape s, bool ta, bool tb, int pad, uint32_t seed) {
  Mats x{s.m, s.n, s.k, 0, 0, 0, ta, tb, {}, {}, {}};
  int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  x.lda = a_cols + pad;
  x.ldb = b_cols + pad;
  x.ldc = s.n + pad;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  x.a.resize(size_t(std::max<int64_t>(a_rows * x.lda, 1)));
  x.b.resize(size_t(std::max<int64_t>(b_rows * x.ldb, 1)));
  x.c.resize(size_t(std::max<int64_t>(s.m * x.ldc, 1)));
  for (auto& v : x.a) v = u(rng);
  for (auto& v : x.b) v = u(rng);
  for (auto& v : x.c) v = u(rng);
  return x;
}

Trans tr(bool t) { return t ? Trans::kYes : Trans::kNo; }

std::vector<double> tolerance(const Mats& x, float alpha, float beta) {
  const double eps = std::numeric_limits<float>::epsilon();
  std::vector<double> tol(size_t(x.m * x.n));
  for (int64_t i = 0; i < x.m; ++i)
    for (int64_t j = 0; j < x.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < x.k; ++p) {
        double av = x.ta ? x.a[p * x.lda + i] : x.a[i * x.lda + p];
        double bv = x.tb ? x.b[j * x.ldb + p] : x.b[p * x.ldb + j];
        s += std::fabs(av * bv);
      }
      double cterm = beta == 0.0f ? 0.0 : std::fabs(double(beta) * x.c[i * x.ldc + j]);
      tol[i * x.n + j] = 2.0 * double(x.k + 2) * eps * (std::fabs(double(alpha)) * s + cterm) +
                         1e-30;
    }
  return tol;
}

std::vector<GemmBlocking> blockings() {
  std::vector<GemmBlocking> out;
  CacheSizes caches = read_cache_sizes();
  for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
    if (!core::isa_supported(isa)) continue;
    out.push_back(derive_gemm_blocking(isa, caches));
    // A tiny blocking so small shapes still cross several NC, KC and MC block boundaries.
    GemmBlocking tiny = out.back();
    tiny.kc = 16;
    tiny.mc = 2 * tiny.mr;
    tiny.nc = 2 * tiny.nr;
    out.push_back(tiny);
  }
  return out;
}

std::string describe(const Mats& x, float alpha, float beta, const GemmBlocking& g) {
  return std::to_string(x.m) + "x" + std::to_string(x.n) + "x" + std::to_string(x.k) +
         " ta=" + std::to_string(x.ta) + " tb=" + std::to_string(x.tb) +
         " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) + " " + g.explain();
}

const std::vector<Shape> kShapes = {{1, 1, 1},    {7, 13, 5},    {33, 65, 17}, {6, 16, 8},
                                    {12, 32, 300}, {257, 129, 300}, {5, 200, 3},  {100, 3, 40}};

TEST(Gemm, MatchesReferenceAndOpenBlasGated) {
  openblas_set_num_threads(1);
  core::ThreadPool pool(2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<float, float>> alpha_beta = {{1, 0}, {0.5f, 0}, {1, 1},
                                                          {-1.5f, 0.25f}};
  uint32_t seed = 1;
  for (const GemmBlocking& g : blockings())
    for (Shape s : kShapes)
      for (int t = 0; t < 4; ++t)
        for (auto [alpha, beta] : alpha_beta) {
          bool ta = t & 1, tb = t & 2;
          Mats x = make(s, ta, tb, /*pad=*/(seed % 3) * 3, seed);
          ++seed;
          const std::vector<float> a0 = x.a, b0 = x.b;
          std::vector<float> c = x.c, ref = x.c, blas = x.c;
          // Poison: where beta == 0, C's window is NaN; its padding is a sentinel throughout.
          for (int64_t i = 0; i < x.m; ++i)
            for (int64_t j = 0; j < x.ldc; ++j)
              c[i * x.ldc + j] = j < x.n ? (beta == 0.0f ? nan : c[i * x.ldc + j]) : 1234.5f;
          ref = c;
          sgemm(tr(ta), tr(tb), x.m, x.n, x.k, alpha, x.a.data(), x.lda, x.b.data(), x.ldb, beta,
                c.data(), x.ldc, {&pool, &g});
          sgemm_reference(tr(ta), tr(tb), x.m, x.n, x.k, alpha, x.a.data(), x.lda, x.b.data(),
                          x.ldb, beta, ref.data(), x.ldc);
          cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                      tb ? CblasTrans : CblasNoTrans, int(x.m), int(x.n), int(x.k), alpha,
                      x.a.data(), int(x.lda), x.b.data(), int(x.ldb), beta, blas.data(),
                      int(x.ldc));
          std::string what = describe(x, alpha, beta, g);
          ASSERT_EQ(0, std::memcmp(a0.data(), x.a.data(), a0.size() * 4)) << "A written " << what;
          ASSERT_EQ(0, std::memcmp(b0.data(), x.b.data(), b0.size() * 4)) << "B written " << what;
          std::vector<double> tol = tolerance(x, alpha, beta);
          for (int64_t i = 0; i < x.m; ++i) {
            for (int64_t j = x.n; j < x.ldc; ++j)
              ASSERT_EQ(c[i * x.ldc + j], 1234.5f) << "padding written " << what;
            for (int64_t j = 0; j < x.n; ++j) {
              float v = c[i * x.ldc + j];
              ASSERT_TRUE(std::isfinite(v)) << "(" << i << "," << j << ") " << what;
              ASSERT_LE(std::fabs(double(v) - ref[i * x.ldc + j]), tol[i * x.n + j])
                  << "vs reference (" << i << "," << j << ") " << what;
              ASSERT_LE(std::fabs(double(v) - blas[i * x.ldc + j]), tol[i * x.n + j])
                  << "vs OpenBLAS (" << i << "," << j << ") " << what;
            }
          }
        }
}

TEST(Gemm, AlphaZeroDoesNotReadInputs) {
  std::vector<float> a(12, std::numeric_limits<float>::quiet_NaN()), b = a;
  std::vector<float> c = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  sgemm(Trans::kNo, Trans::kNo, 3, 3, 4, 0.0f, a.data(), 4, b.data(), 3, 2.0f, c.data(), 3);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(c[i], 2.0f * float(i + 1));
  std::vector<float> d(9, std::numeric_limits<float>::quiet_NaN());
  sgemm(Trans::kNo, Trans::kNo, 3, 3, 0, 1.0f, a.data(), 4, b.data(), 3, 0.0f, d.data(), 3);
  for (float v : d) EXPECT_EQ(v, 0.0f);
}

// 37x13x133 and 100x3x300 are narrow: under the tiny blocking (NC = 2 NR) their one NR-rounded
// column block leaves room for two depth blocks of 16 in the packed B budget, so K splits into
// several groups that each hold several depth blocks, plus a tail.
TEST(Gemm, OneAndTwoThreadsBitwiseEqual) {
  core::ThreadPool one(1), two(2);
  const std::vector<Shape> shapes = {{7, 13, 5},    {33, 65, 17}, {257, 129, 300}, {300, 70, 600},
                                     {13, 500, 40}, {37, 13, 133}, {100, 3, 300}};
  uint32_t seed = 100;
  for (const GemmBlocking& g : blockings())
    for (Shape s : shapes)
      for (int t = 0; t < 4; ++t) {
        Mats x = make(s, t & 1, t & 2, 1, seed++);
        std::vector<float> c1 = x.c, c2 = x.c;
        sgemm(tr(x.ta), tr(x.tb), x.m, x.n, x.k, 0.75f, x.a.data(), x.lda, x.b.data(), x.ldb,
              0.5f, c1.data(), x.ldc, {&one, &g});
        sgemm(tr(x.ta), tr(x.tb), x.m, x.n, x.k, 0.75f, x.a.data(), x.lda, x.b.data(), x.ldb,
              0.5f, c2.data(), x.ldc, {&two, &g});
        ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * 4))
            << describe(x, 0.75f, 0.5f, g);
      }
}

// Grouping consecutive depth blocks (as many as fit the packed B budget, KC x NC) changes only
// where each block's B panels lie in the buffer, not the order of any sum: the same product gives
// the same bits with NC = roundup(N, NR) (one depth block per group) and with NC = 3 or 8 times
// that (groups of 3 or 8 blocks, the last one short), for 1-3 threads, both thread splits, every
// transpose, beta 0 and 0.5, and KC 16 or 24 so that K has several blocks and a tail. A wrong
// offset of a block inside its group (b_block) reads another block's panels or a half-written one.
TEST(Gemm, GroupedDepthBlocksGiveTheSameBitsAsUngrouped) {
  core::ThreadPool p1(1), p2(2), p3(3);
  core::ThreadPool* pools[] = {&p1, &p2, &p3};
  const std::vector<Shape> shapes = {{1, 1, 200},   {7, 13, 133}, {37, 21, 517},
                                     {100, 3, 300}, {13, 45, 600}, {257, 17, 161}};
  const CacheSizes caches = read_cache_sizes();
  uint32_t seed = 900;
  for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
    if (!core::isa_supported(isa)) continue;
    const GemmBlocking base = derive_gemm_blocking(isa, caches);
    for (Shape s : shapes)
      for (int t = 0; t < 4; ++t) {
        Mats x = make(s, t & 1, t & 2, 1, seed++);
        const int64_t n_round = (s.n + base.nr - 1) / base.nr * base.nr;
        for (int64_t kc : {16, 24})
          for (int split : {1, 2})
            for (float beta : {0.0f, 0.5f}) {
              std::vector<float> want;
              std::string want_what;
              for (int64_t mult : {1, 3, 8})
                for (core::ThreadPool* pool : pools) {
                  GemmBlocking g = base;
                  g.kc = kc;
                  g.mc = 2 * g.mr;
                  g.nc = mult * n_round;
                  g.split = split;
                  std::vector<float> c = x.c;
                  sgemm(tr(x.ta), tr(x.tb), x.m, x.n, x.k, 0.75f, x.a.data(), x.lda, x.b.data(),
                        x.ldb, beta, c.data(), x.ldc, {pool, &g});
                  std::string what = describe(x, 0.75f, beta, g) + " split " +
                                     std::to_string(split) + " threads " +
                                     std::to_string(pool->num_threads());
                  if (want.empty()) {
                    want = c;
                    want_what = what;
                  } else {
                    ASSERT_EQ(0, std::memcmp(want.data(), c.data(), c.size() * 4))
                        << what << "\n  differs from " << want_what;
                  }
                }
            }
      }
  }
}

// Packing lays out op(A) and op(B) the same way whatever the transposes, and each panel form
// (rows copied with 4 x 4 transposes, columns copied a whole panel wide, the edge loops) is a
// copy: so the same product from A or its transpose, B or its transpose, gives the same bits.
// Shapes cross full and edge panels of both micro-kernels, depths with and without a tail of
// fewer than 16 (the transposing copy's step), and leading dimensions that are powers of two.
TEST(Gemm, TransposedOperandsGiveTheSameBits) {
  core::ThreadPool pool(2);
  const std::vector<Shape> shapes = {{24, 64, 32}, {37, 70, 45}, {130, 96, 300}, {12, 32, 16},
                                     {25, 33, 17}};
  uint32_t seed = 500;
  for (const GemmBlocking& g : blockings())
    for (Shape s : shapes)
      for (int pad : {0, 3}) {
        Mats x = make(s, false, false, pad, seed++);
        // The transposes, with their own padding.
        const int64_t ldat = s.m + pad, ldbt = s.k + pad;
        std::vector<float> at(size_t(s.k * ldat), 7.f), bt(size_t(s.n * ldbt), 7.f);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t p = 0; p < s.k; ++p) at[p * ldat + i] = x.a[i * x.lda + p];
        for (int64_t p = 0; p < s.k; ++p)
          for (int64_t j = 0; j < s.n; ++j) bt[j * ldbt + p] = x.b[p * x.ldb + j];
        std::vector<float> want = x.c;
        sgemm(Trans::kNo, Trans::kNo, s.m, s.n, s.k, 0.75f, x.a.data(), x.lda, x.b.data(), x.ldb,
              0.5f, want.data(), x.ldc, {&pool, &g});
        for (int t = 1; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          std::vector<float> got = x.c;
          sgemm(tr(ta), tr(tb), s.m, s.n, s.k, 0.75f, ta ? at.data() : x.a.data(),
                ta ? ldat : x.lda, tb ? bt.data() : x.b.data(), tb ? ldbt : x.ldb, 0.5f,
                got.data(), x.ldc, {&pool, &g});
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4))
              << "ta=" << ta << " tb=" << tb << " pad=" << pad << " "
              << describe(x, 0.75f, 0.5f, g);
        }
      }
}

// The AVX-512 path computes the bottom edge of C (fewer than 12 rows left) with a kernel of
// that many rows, straight into C, reads fp32 A unpacked where N is at most two slivers and
// fp32 B (not transposed) unpacked where M is at most 24 panels; the scalar path packs
// everything and runs its full tile into a scratch, then applies the epilogue element by
// element. All are one sequential FMA chain per element and the same epilogue, so with the same
// KC they give the same bits: for every row count mod 12 (the expert products' 64 rows leave
// 4), beta 0 and 0.5, every transpose, K with and without several depth blocks, N = 40 (A
// unpacked, a column edge beside a full sliver), 64 (A unpacked, the experts' width block) and
// 96 (A packed; B unpacked where not transposed).
TEST(Gemm, AvxEdgeRowsAndUnpackedOperandsGiveTheScalarPathsBits) {
  if (!core::isa_supported(core::Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  core::ThreadPool pool(1);
  const CacheSizes caches = read_cache_sizes();
  GemmBlocking wide = derive_gemm_blocking(core::Isa::kAvx512, caches);
  GemmBlocking scalar = derive_gemm_blocking(core::Isa::kScalar, caches);
  wide.kc = scalar.kc = 64;
  uint32_t seed = 1300;
  for (int64_t m = 12; m <= 24; ++m)
    for (int64_t n : {40, 64, 96})
    for (int64_t k : {5, 64, 150})
      for (int t = 0; t < 4; ++t)
        for (float beta : {0.0f, 0.5f}) {
          Mats x = make({m, n, k}, t & 1, t & 2, 1, seed++);
          std::vector<float> want = x.c, got = x.c;
          sgemm(tr(x.ta), tr(x.tb), x.m, x.n, x.k, 0.75f, x.a.data(), x.lda, x.b.data(), x.ldb,
                beta, want.data(), x.ldc, {&pool, &scalar});
          sgemm(tr(x.ta), tr(x.tb), x.m, x.n, x.k, 0.75f, x.a.data(), x.lda, x.b.data(), x.ldb,
                beta, got.data(), x.ldc, {&pool, &wide});
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4))
              << describe(x, 0.75f, beta, wide);
        }
}

TEST(Gemm, GroupedEqualsPerExpertIncludingEmptyGroups) {
  core::ThreadPool pool(2);
  const int64_t n = 37, k = 70;
  const std::vector<int64_t> rows = {5, 0, 64, 1, 0, 130};
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  for (bool tb : {false, true}) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    const int64_t lda = k + 2, ldc = n + 1, ldb = (tb ? k : n) + 3;
    std::vector<float> a(size_t(total * lda));
    for (auto& v : a) v = u(rng);
    std::vector<std::vector<float>> w(rows.size());
    std::vector<const float*> b(rows.size(), nullptr);
    for (size_t g = 0; g < rows.size(); ++g) {
      if (rows[g] == 0) continue;  // empty experts pass null weights
      w[g].resize(size_t((tb ? n : k) * ldb));
      for (auto& v : w[g]) v = u(rng);
      b[g] = w[g].data();
    }
    std::vector<float> c(size_t(total * ldc), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> expect(c.size(), std::numeric_limits<float>::quiet_NaN());
    grouped_sgemm(tr(tb), n, k, rows, 1.0f, a.data(), lda, b, ldb, 0.0f, c.data(), ldc,
                  {&pool, nullptr});
    int64_t r0 = 0;
    for (size_t g = 0; g < rows.size(); ++g) {
      if (rows[g] > 0)
        sgemm(Trans::kNo, tr(tb), rows[g], n, k, 1.0f, a.data() + r0 * lda, lda, b[g], ldb,
              0.0f, expect.data() + r0 * ldc, ldc, {&pool, nullptr});
      r0 += rows[g];
    }
    for (int64_t i = 0; i < total; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(0, std::memcmp(&c[i * ldc + j], &expect[i * ldc + j], 4)) << i << "," << j;
  }
}

TEST(GemmBlocking, FollowsTheCacheModel) {
  CacheSizes caches;
  caches.l1_bytes = 48 << 10;
  caches.l1_ways = 12;
  caches.l2_bytes = 2 << 20;
  caches.l3_bytes = 480ll << 20;
  GemmBlocking g2 = derive_gemm_blocking(core::Isa::kAvx2, caches);
  EXPECT_EQ(g2.mr, 6);
  EXPECT_EQ(g2.nr, 16);
  EXPECT_EQ(g2.kc, 512);   // 2 MiB / 16 / (16 * 4 B) = 2048, capped at 512
  EXPECT_EQ(g2.mc, 252);   // 512 KiB / (512 * 4 B) = 256, down to a multiple of 6
  EXPECT_EQ(g2.nc, 4096);  // capped
  GemmBlocking g5 = derive_gemm_blocking(core::Isa::kAvx512, caches);
  EXPECT_EQ(g5.kc, 512);   // 2 MiB / 16 / (32 * 4 B) = 1024, capped at 512
  EXPECT_EQ(g5.mc, 252);   // 512 KiB / (512 * 4 B) = 256, down to a multiple of 12
  // The AMD EPYC of issue 15 (L1 32 KiB, L2 1 MiB, L3 32 MiB).
  caches.l1_bytes = 32 << 10;
  caches.l1_ways = 8;
  caches.l2_bytes = 1 << 20;
  caches.l3_bytes = 32 << 20;
  GemmBlocking e5 = derive_gemm_blocking(core::Isa::kAvx512, caches);
  EXPECT_EQ(e5.kc, 512);   // 1 MiB / 16 / (32 * 4 B)
  EXPECT_EQ(e5.mc, 120);   // 256 KiB / (512 * 4 B) = 128, down to a multiple of 12
  EXPECT_EQ(e5.nc, 4096);  // 16 MiB / (512 * 4 B) = 8192, capped
  // A small L2 gives a shallower block: 256 KiB / 16 / (32 * 4 B) = 128.
  caches.l2_bytes = 256 << 10;
  EXPECT_EQ(derive_gemm_blocking(core::Isa::kAvx512, caches).kc, 128);
  for (const GemmBlocking& g : blockings()) {
    if (g.kc == 16) continue;  // the tiny test blocking
    EXPECT_LE(g.kc * g.nr * 4, g.caches.l2_bytes / 16) << g.explain();
    EXPECT_LE(g.mc * g.kc * 4, g.caches.l2_bytes / 4) << g.explain();
    EXPECT_EQ(g.mc % g.mr, 0);
    EXPECT_EQ(g.nc % g.nr, 0);
  }
  EXPECT_TRUE(core::isa_supported(gemm_blocking().isa)) << gemm_blocking().explain();
}

}  // namespace
}  // namespace trex::kernels
