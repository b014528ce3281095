// mHC pre- and post-projection and the final head's mix: fused vs the eager chain (fp32 and bf16 streams, n = 1..4, odd
// widths, few Sinkhorn iterations and the model's 20), Sinkhorn columns summing to 1, gating
// (poisoned outputs, inputs unchanged), finite differences of every gradient (X, phi, b, scale;
// F, X, post, C), and bit-identical results for 1-3 threads; the reference and thread checks on
// every vector path the CPU has (AVX2, AVX-512: row_isa.h).
//
// Tolerances (atol = rtol): fp32 outputs 1e-4 (summation order: the fused projection sums 8-lane
// partials, the reference GEMM sums KC blocks; 20 Sinkhorn steps do not amplify this because
// each step is a contraction of relative errors); bf16-stored y, out, dF, dX 1e-2 (one bf16 ulp
// is 2^-8); the fp32 gates, C, dphi, db and dscale 1e-4 in both dtypes (computed in fp32 from the
// same stored values), except dphi, db and dscale in bf16, which sum over tokens values derived
// from bf16-rounded inputs in different orders: 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "grad_check.h"
#include "kernel_test_util.h"
#include "trex/core/arena.h"
#include "trex/core/cpu_features_override.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/mhc_projection_backward.h"
#include "trex/kernels/mhc_sinkhorn.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

MhcShape shape(int64_t tokens, int64_t d, int n, int iters) {
  MhcShape s;
  s.tokens = tokens;
  s.d = d;
  s.n = n;
  s.iters = iters;
  return s;
}
const MhcShape kShapes[] = {shape(1, 8, 4, 20), shape(5, 7, 4, 20), shape(3, 33, 4, 20),
                            shape(17, 64, 4, 20), shape(4, 16, 3, 5), shape(6, 5, 1, 3),
                            shape(9, 24, 2, 1),
                            // the projections as one GEMM (16 tokens or more), and backward
                            // column blocks of 256 that straddle two streams of 100
                            shape(40, 100, 4, 20)};

template <class T>
struct Params {
  std::vector<T> X, dy, F, G, dX0;
  std::vector<float> phi, b, scale, dpost, dC;
};
template <class T>
Params<T> make_params(const MhcShape& sh, uint32_t seed, int dist) {
  const int64_t nd = sh.n * sh.d, R = sh.rows();
  Params<T> p;
  p.X = random_vec<T>(sh.tokens * nd, seed, dist);
  p.dy = random_vec<T>(sh.tokens * sh.d, seed + 1, 0);
  p.F = random_vec<T>(sh.tokens * sh.d, seed + 2, dist);
  p.G = random_vec<T>(sh.tokens * nd, seed + 3, 0);
  p.dX0 = random_vec<T>(sh.tokens * nd, seed + 4, 0);
  // phi ~ N(0, 1/nd) so that m = r phi xv is O(1) and every gate is away from saturation.
  p.phi = random_vec<float>(R * nd, seed + 5, 0, 1.f / std::sqrt(float(nd)));
  p.b = random_vec<float>(R, seed + 6, 0, 0.5f);
  p.scale = {1.2f, 0.8f, 1.5f};
  p.dpost = random_vec<float>(sh.tokens * sh.n, seed + 7, 0);
  p.dC = random_vec<float>(sh.tokens * sh.n * sh.n, seed + 8, 0);
  return p;
}

std::string name(const MhcShape& sh) {
  return "tokens " + std::to_string(sh.tokens) + " d " + std::to_string(sh.d) + " n " +
         std::to_string(sh.n) + " T " + std::to_string(sh.iters);
}

template <class T>
void check_against_ref(double tol, double sum_tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 500;
  for (const MhcShape& sh : kShapes) {
    for (int dist = 0; dist < 3; ++dist, seed += 11) {
      std::string tag = name(sh) + " dist " + std::to_string(dist);
      Params<T> p = make_params<T>(sh, seed, dist);
      Params<T> p0 = p;
      const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d, R = sh.rows();
      std::vector<T> y(static_cast<size_t>(tok * sh.d), nan_value<T>()), yr = y;
      std::vector<float> pre(static_cast<size_t>(tok * n), NAN), prer = pre, post = pre, postr = pre;
      std::vector<float> C(static_cast<size_t>(tok * n * n), NAN), Cr = C;
      mhc_pre_forward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), y.data(), pre.data(),
                      post.data(), C.data(), sh, &pool);
      mhc_pre_forward_ref(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), yr.data(),
                          prer.data(), postr.data(), Cr.data(), sh, &pool);
      expect_close(y, yr, tol, tag + " y");
      expect_close(pre, prer, 1e-4, tag + " pre");
      expect_close(post, postr, 1e-4, tag + " post");
      expect_close(C, Cr, 1e-4, tag + " C");
      for (int64_t t = 0; t < tok; ++t)
        for (int64_t k = 0; k < n; ++k) {
          double s = 0;
          for (int64_t j = 0; j < n; ++j) s += C[size_t(t * n * n + j * n + k)];
          EXPECT_NEAR(s, 1.0, 1e-5) << tag << " column " << k << " of token " << t;
        }
      // Pre backward: dX accumulates onto dX0.
      std::vector<T> dX = p.dX0, dXr = p.dX0;
      std::vector<float> dphi(static_cast<size_t>(R * nd), NAN), dphir = dphi;
      std::vector<float> db(static_cast<size_t>(R), NAN), dbr = db, ds(3, NAN), dsr = ds;
      std::vector<float> ws(static_cast<size_t>(mhc_pre_backward_workspace(sh)), NAN);
      mhc_pre_backward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), p.dy.data(),
                       p.dpost.data(), p.dC.data(), dX.data(), dphi.data(), db.data(), ds.data(),
                       sh, ws.data(), &pool);
      mhc_pre_backward_ref(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), p.dy.data(),
                           p.dpost.data(), p.dC.data(), dXr.data(), dphir.data(), dbr.data(),
                           dsr.data(), sh, &pool);
      expect_close(dX, dXr, tol, tag + " dX (pre)");
      expect_close(dphi, dphir, sum_tol, tag + " dphi");
      expect_close(db, dbr, sum_tol, tag + " db");
      expect_close(ds, dsr, sum_tol, tag + " dscale");
      // Post forward and backward.
      std::vector<T> out(static_cast<size_t>(tok * nd), nan_value<T>()), outr = out;
      mhc_post_forward(p.F.data(), p.X.data(), post.data(), C.data(), out.data(), sh, &pool);
      mhc_post_forward_ref(p.F.data(), p.X.data(), post.data(), C.data(), outr.data(), sh, &pool);
      expect_close(out, outr, tol, tag + " out");
      std::vector<T> dF(static_cast<size_t>(tok * sh.d), nan_value<T>()), dFr = dF;
      std::vector<T> dXp(static_cast<size_t>(tok * nd), nan_value<T>()), dXpr = dXp;
      std::vector<float> dpo(static_cast<size_t>(tok * n), NAN), dpor = dpo;
      std::vector<float> dCo(static_cast<size_t>(tok * n * n), NAN), dCor = dCo;
      mhc_post_backward(p.G.data(), p.F.data(), p.X.data(), post.data(), C.data(), dF.data(),
                        dXp.data(), dpo.data(), dCo.data(), sh, &pool);
      mhc_post_backward_ref(p.G.data(), p.F.data(), p.X.data(), post.data(), C.data(), dFr.data(),
                            dXpr.data(), dpor.data(), dCor.data(), sh, &pool);
      expect_close(dF, dFr, tol, tag + " dF");
      expect_close(dXp, dXpr, tol, tag + " dX (post)");
      expect_close(dpo, dpor, 1e-4, tag + " dpost");
      expect_close(dCo, dCor, 1e-4, tag + " dC");
      for (const auto* v : {&y, &out, &dF, &dXp, &dX})
        for (const T& x : *v) ASSERT_FALSE(std::isnan(val(x))) << tag << ": output not written";
      for (const auto* v : {&pre, &post, &C, &dphi, &db, &ds, &dpo, &dCo})
        for (float x : *v) ASSERT_FALSE(std::isnan(x)) << tag << ": output not written";
      EXPECT_TRUE(same_bytes(p.X, p0.X) && same_bytes(p.dy, p0.dy) && same_bytes(p.F, p0.F) &&
                  same_bytes(p.G, p0.G) && same_bytes(p.phi, p0.phi) && same_bytes(p.b, p0.b) &&
                  same_bytes(p.scale, p0.scale) && same_bytes(p.dpost, p0.dpost) &&
                  same_bytes(p.dC, p0.dC))
          << tag << ": an input changed";
    }
  }
}

// Every vector path of the post-projection (row_isa.h) against the reference.
TEST(Mhc, F32MatchesReference) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_against_ref<float>(1e-4, 1e-4);
  }
}
TEST(Mhc, Bf16MatchesReference) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_against_ref<core::bf16>(1e-2, 1e-3);
  }
}
// AVX-512 CPUs without AVX512_BF16 round bf16 outputs with integer operations: that path too,
// on a CPU that has the conversion instruction (elsewhere the test above already takes it).
TEST(Mhc, Bf16MatchesReferenceWithoutAvx512Bf16) {
  if (!core::cpu_features().avx512_bf16) GTEST_SKIP() << "no AVX512_BF16: the test above runs this path";
  core::CpuFeatures no_bf16 = core::cpu_features();
  no_bf16.avx512_bf16 = false;
  core::ScopedCpuFeaturesForTest features(no_bf16);
  ASSERT_FALSE(core::cpu_features().avx512_bf16);
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_against_ref<core::bf16>(1e-2, 1e-3);
  }
}

// The post-projection forward and backward give the same bits on every path: AVX2, AVX-512 with
// plain stores (outputs one element off a 32-byte boundary), and AVX-512 streaming outputs of
// 8 MiB and more (bf16 rounded by the CPU's conversion where it has one); dpost and dC, sums of
// 8 or 16 lane-partials by path (docs/kernels-suite.md), are the same within a path.
template <class T>
void check_post_paths() {
  core::ThreadPool pool(2);
  const MhcShape sh = shape(int64_t((size_t(9) << 20) / sizeof(T)) / (4 * 512), 512, 4, 20);
  const int64_t n_out = sh.tokens * sh.n * sh.d;
  Params<T> p = make_params<T>(sh, 91, 0);
  std::vector<float> post = random_vec<float>(sh.tokens * sh.n, 92, 1);
  std::vector<float> C = random_vec<float>(sh.tokens * sh.n * sh.n, 93, 1);
  const int64_t n_f = sh.tokens * sh.d;
  auto out = core::aligned_array<T>(size_t(n_out) + 16), dX = core::aligned_array<T>(size_t(n_out) + 16);
  auto dF = core::aligned_array<T>(size_t(n_f) + 16);
  std::vector<T> first, first_dX, first_dF;
  for (core::Isa isa : row_isas()) {
    // dpost and dC sum over d in 8 or 16 lane-partials by path: compared within one path.
    std::vector<float> first_sums;
    for (size_t off : {size_t(0), size_t(1)}) {
      ScopedRowIsa path(isa);
      SCOPED_TRACE(std::string(core::to_string(isa)) + " offset " + std::to_string(off));
      std::fill(out.get(), out.get() + n_out + 16, nan_value<T>());
      std::fill(dX.get(), dX.get() + n_out + 16, nan_value<T>());
      std::fill(dF.get(), dF.get() + n_f + 16, nan_value<T>());
      std::vector<float> dpost(size_t(sh.tokens * sh.n), NAN), dC(size_t(sh.tokens * sh.n * sh.n), NAN);
      mhc_post_forward(p.F.data(), p.X.data(), post.data(), C.data(), out.get() + off, sh, &pool);
      mhc_post_backward(p.G.data(), p.F.data(), p.X.data(), post.data(), C.data(), dF.get() + off,
                        dX.get() + off, dpost.data(), dC.data(), sh, &pool);
      std::vector<T> got(out.get() + off, out.get() + off + n_out);
      std::vector<T> got_dX(dX.get() + off, dX.get() + off + n_out), got_dF(dF.get() + off, dF.get() + off + n_f);
      std::vector<float> sums = dpost;
      sums.insert(sums.end(), dC.begin(), dC.end());
      if (first.empty()) {
        first = got, first_dX = got_dX, first_dF = got_dF;
        for (size_t i = 0; i < got.size(); ++i) ASSERT_FALSE(std::isnan(val(got[i]))) << "out[" << i << "]";
        for (size_t i = 0; i < got_dX.size(); ++i) ASSERT_FALSE(std::isnan(val(got_dX[i]))) << "dX[" << i << "]";
        for (size_t i = 0; i < got_dF.size(); ++i) ASSERT_FALSE(std::isnan(val(got_dF[i]))) << "dF[" << i << "]";
      } else {
        EXPECT_TRUE(same_bytes(got, first)) << "out differs from the first path";
        EXPECT_TRUE(same_bytes(got_dX, first_dX)) << "dX differs from the first path";
        EXPECT_TRUE(same_bytes(got_dF, first_dF)) << "dF differs from the first path";
      }
      if (first_sums.empty()) first_sums = sums;
      else EXPECT_TRUE(same_bytes(sums, first_sums)) << "dpost or dC differ between the stores";
    }
  }
}
TEST(Mhc, PostPathsGiveSameBitsF32) { check_post_paths<float>(); }
TEST(Mhc, PostPathsGiveSameBitsBf16) { check_post_paths<core::bf16>(); }

// bf16 dF and dX that are subnormal stay subnormal: vcvtneps2bf16 would flush them to zero, so
// the 16-lane post backward's rounding falls back to the integer one for such a step. With
// post = (1, 0, 0, 0) and C = I each output is a copy of a G row (dF = G_0, dX_j = G_j: every
// other product is a signed zero added to a nonzero value), so they must come back bit for bit,
// subnormals included, on every path: plain stores (one element off a 32-byte boundary) and
// streaming ones (9 MiB), d = 520 (a partial last 16-lane step on AVX-512).
TEST(Mhc, PostBackwardKeepsSubnormalBf16) {
  core::ThreadPool pool(2);
  const MhcShape sh = shape(int64_t((size_t(9) << 20) / 2) / (4 * 520), 520, 4, 20);
  const int64_t n = sh.n, nd = n * sh.d, n_out = sh.tokens * nd, n_f = sh.tokens * sh.d;
  std::vector<core::bf16> G = random_vec<core::bf16>(n_out, 61, 0);
  // Every 7th element subnormal (exponent 0, mantissa 1..127, either sign); no zeros.
  for (size_t i = 0; i < G.size(); ++i) {
    if (i % 7 == 0) G[i].bits = uint16_t(((i / 7) % 127 + 1) | (i % 2 ? 0x8000 : 0));
    else if ((G[i].bits & 0x7fff) == 0) G[i] = core::to_bf16(0.5f);
  }
  const auto F = random_vec<core::bf16>(n_f, 62, 0);
  const auto X = random_vec<core::bf16>(n_out, 63, 0);
  std::vector<float> post(size_t(sh.tokens * n), 0.f), C(size_t(sh.tokens * n * n), 0.f);
  for (int64_t t = 0; t < sh.tokens; ++t) {
    post[size_t(t * n)] = 1.f;
    for (int64_t j = 0; j < n; ++j) C[size_t((t * n + j) * n + j)] = 1.f;
  }
  auto dX = core::aligned_array<core::bf16>(size_t(n_out) + 16);
  auto dF = core::aligned_array<core::bf16>(size_t(n_f) + 16);
  std::vector<float> dpost(size_t(sh.tokens * n)), dC(size_t(sh.tokens * n * n));
  for (core::Isa isa : row_isas()) {
    for (size_t off : {size_t(0), size_t(1)}) {
      ScopedRowIsa path(isa);
      SCOPED_TRACE(std::string(core::to_string(isa)) + " offset " + std::to_string(off));
      mhc_post_backward(G.data(), F.data(), X.data(), post.data(), C.data(), dF.get() + off,
                        dX.get() + off, dpost.data(), dC.data(), sh, &pool);
      std::vector<core::bf16> got_dX(dX.get() + off, dX.get() + off + n_out);
      std::vector<core::bf16> want_dF(static_cast<size_t>(n_f));
      std::vector<core::bf16> got_dF(dF.get() + off, dF.get() + off + n_f);
      for (int64_t t = 0; t < sh.tokens; ++t)
        std::copy(G.begin() + t * nd, G.begin() + t * nd + sh.d, want_dF.begin() + t * sh.d);
      EXPECT_TRUE(same_bytes(got_dX, G)) << "dX is not G";
      EXPECT_TRUE(same_bytes(got_dF, want_dF)) << "dF is not G_0";
    }
  }
}

TEST(Mhc, PreBackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  for (MhcShape sh : {shape(3, 6, 4, 20), shape(2, 5, 2, 3)}) {
    Params<float> p = make_params<float>(sh, 71, 0);
    const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d, R = sh.rows();
    std::vector<float> dX(static_cast<size_t>(tok * nd), 0.f), dphi(static_cast<size_t>(R * nd));
    std::vector<float> db(static_cast<size_t>(R)), ds(3);
    mhc_pre_backward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), p.dy.data(),
                     p.dpost.data(), p.dC.data(), dX.data(), dphi.data(), db.data(), ds.data(), sh,
                     nullptr, &pool);
    // loss = <dy, y> + <dpost, post> + <dC, C>.
    auto loss = [&] {
      std::vector<float> y(static_cast<size_t>(tok * sh.d)), pre(static_cast<size_t>(tok * n));
      std::vector<float> post(pre.size()), C(static_cast<size_t>(tok * n * n));
      mhc_pre_forward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), y.data(), pre.data(),
                      post.data(), C.data(), sh, &pool);
      auto id = [](float v) { return v; };
      return weighted_sum(y, p.dy, id) + weighted_sum(post, p.dpost, id) +
             weighted_sum(C, p.dC, id);
    };
    std::string tag = name(sh);
    expect_grad_matches_fd(tag + " dX", p.X.data(), tok * nd, dX.data(), loss);
    expect_grad_matches_fd(tag + " dphi", p.phi.data(), R * nd, dphi.data(), loss);
    expect_grad_matches_fd(tag + " db", p.b.data(), R, db.data(), loss);
    expect_grad_matches_fd(tag + " dscale", p.scale.data(), 3, ds.data(), loss);
  }
}

TEST(Mhc, PostBackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  MhcShape sh = shape(3, 9, 4, 20);
  Params<float> p = make_params<float>(sh, 81, 0);
  const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
  auto post = random_vec<float>(tok * n, 3, 0), C = random_vec<float>(tok * n * n, 4, 0);
  std::vector<float> dF(static_cast<size_t>(tok * sh.d)), dX(static_cast<size_t>(tok * nd));
  std::vector<float> dpost(post.size()), dC(C.size());
  mhc_post_backward(p.G.data(), p.F.data(), p.X.data(), post.data(), C.data(), dF.data(),
                    dX.data(), dpost.data(), dC.data(), sh, &pool);
  auto loss = [&] {
    std::vector<float> out(static_cast<size_t>(tok * nd));
    mhc_post_forward(p.F.data(), p.X.data(), post.data(), C.data(), out.data(), sh, &pool);
    return weighted_sum(out, p.G, [](float v) { return v; });
  };
  expect_grad_matches_fd("dF", p.F.data(), tok * sh.d, dF.data(), loss);
  expect_grad_matches_fd("dX", p.X.data(), tok * nd, dX.data(), loss);
  expect_grad_matches_fd("dpost", post.data(), tok * n, dpost.data(), loss);
  expect_grad_matches_fd("dC", C.data(), tok * n * n, dC.data(), loss);
}

// The final head's mix (hc_head): fused vs eager, then finite differences of every gradient.
template <class T>
void check_head(double tol, double sum_tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 900;
  for (const MhcShape& sh : kShapes) {
    for (int dist = 0; dist < 3; ++dist, seed += 13) {
      std::string tag = "head " + name(sh) + " dist " + std::to_string(dist);
      const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
      auto X = random_vec<T>(tok * nd, seed, dist), X0 = X;
      auto dy = random_vec<T>(tok * sh.d, seed + 1, 0);
      auto phi = random_vec<float>(n * nd, seed + 2, 0, 1.f / std::sqrt(float(nd)));
      auto b = random_vec<float>(n, seed + 3, 0, 0.5f);
      const float scale = 1.3f;
      std::vector<T> y(static_cast<size_t>(tok * sh.d), nan_value<T>()), yr = y;
      std::vector<float> w(static_cast<size_t>(tok * n), NAN), wr = w;
      mhc_head_forward(X.data(), phi.data(), b.data(), scale, y.data(), w.data(), sh, &pool);
      mhc_head_forward_ref(X.data(), phi.data(), b.data(), scale, yr.data(), wr.data(), sh, &pool);
      expect_close(y, yr, tol, tag + " y");
      expect_close(w, wr, 1e-4, tag + " w");
      auto dX = random_vec<T>(tok * nd, seed + 4, 0), dXr = dX;
      std::vector<float> dphi(static_cast<size_t>(n * nd), NAN), dphir = dphi;
      std::vector<float> db(static_cast<size_t>(n), NAN), dbr = db, ds(1, NAN), dsr = ds;
      mhc_head_backward(X.data(), phi.data(), b.data(), scale, dy.data(), dX.data(), dphi.data(),
                        db.data(), ds.data(), sh, nullptr, &pool);
      mhc_head_backward_ref(X.data(), phi.data(), b.data(), scale, dy.data(), dXr.data(),
                            dphir.data(), dbr.data(), dsr.data(), sh, &pool);
      expect_close(dX, dXr, tol, tag + " dX");
      expect_close(dphi, dphir, sum_tol, tag + " dphi");
      expect_close(db, dbr, sum_tol, tag + " db");
      expect_close(ds, dsr, sum_tol, tag + " dscale");
      for (const T& v : y) ASSERT_FALSE(std::isnan(val(v))) << tag << ": y not written";
      EXPECT_TRUE(same_bytes(X, X0)) << tag << ": X changed";
    }
  }
}

TEST(Mhc, HeadF32MatchesReference) { check_head<float>(1e-4, 1e-4); }
TEST(Mhc, HeadBf16MatchesReference) { check_head<core::bf16>(1e-2, 1e-3); }

// The head forward gives the same bits on every path: AVX2, AVX-512 with plain stores (y one
// element off a 32-byte boundary), AVX-512 streaming y (8 MiB and more; on a 64-byte boundary
// the bf16 pipeline streams a line by one store, 32 bytes off it by two), each with and without
// AVX512_BF16 (bf16 y rounded by vcvtne2ps2bf16 or by integer operations). The head backward,
// whose AVX-512 stage 2 widens and rounds bf16 strips by AVX512_BF16 where the CPU has it, gives
// the same bits with and without it, on the column path (few tokens) and the token path.
template <class T>
void check_head_paths() {
  core::ThreadPool pool(2);
  const int64_t big = int64_t((size_t(9) << 20) / sizeof(T)) / 512;  // y of 9 MiB: streamed
  std::vector<bool> bf16_flags = {true};
  if (core::cpu_features().avx512_bf16) bf16_flags.push_back(false);
  // 70 tokens of d 64: the AVX-512 forward's pipeline (d a multiple of a line) in a 64-token
  // block and a 6-token one (one group, then two tokens alone); d 1000 is not a multiple.
  for (const MhcShape& sh : {shape(37, 1000, 4, 20), shape(70, 64, 4, 20), shape(600, 256, 4, 20),
                             shape(big, 512, 4, 20)}) {
    SCOPED_TRACE(name(sh));
    const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
    const auto X = random_vec<T>(tok * nd, 31, 0), dy = random_vec<T>(tok * sh.d, 32, 0);
    const auto phi = random_vec<float>(n * nd, 33, 0, 1.f / std::sqrt(float(nd)));
    const auto b = random_vec<float>(n, 34, 0, 0.5f);
    const auto dX0 = random_vec<T>(tok * nd, 35, 0);
    auto y = core::aligned_array<T>(size_t(tok * sh.d) + 16);
    std::vector<T> first_y;
    std::vector<float> first_w;
    for (core::Isa isa : row_isas())
      for (bool with_bf16 : bf16_flags)
        for (size_t off : {size_t(0), size_t(1), 32 / sizeof(T)}) {
          core::CpuFeatures f = core::cpu_features();
          f.avx512_bf16 = f.avx512_bf16 && with_bf16;
          core::ScopedCpuFeaturesForTest features(f);
          ScopedRowIsa path(isa);
          SCOPED_TRACE(std::string(core::to_string(isa)) + (with_bf16 ? " bf16 on" : " bf16 off") +
                       " offset " + std::to_string(off));
          std::fill(y.get(), y.get() + tok * sh.d + 16, nan_value<T>());
          std::vector<float> w(size_t(tok * n), NAN);
          mhc_head_forward(X.data(), phi.data(), b.data(), 1.3f, y.get() + off, w.data(), sh, &pool);
          std::vector<T> got(y.get() + off, y.get() + off + tok * sh.d);
          if (first_y.empty()) {
            first_y = got, first_w = w;
            for (size_t i = 0; i < got.size(); ++i) ASSERT_FALSE(std::isnan(val(got[i]))) << "y[" << i << "]";
            for (size_t i = 0; i < w.size(); ++i) ASSERT_FALSE(std::isnan(w[i])) << "w[" << i << "]";
          } else {
            EXPECT_TRUE(same_bytes(got, first_y)) << "y differs from the first path";
            EXPECT_TRUE(same_bytes(w, first_w)) << "w differs from the first path";
          }
        }
    if (sh.tokens > 1000) continue;  // the backward: its two stage-2 paths are at the smaller shapes
    std::vector<T> first_dX;
    std::vector<float> first_sums;
    for (bool with_bf16 : bf16_flags) {
      core::CpuFeatures f = core::cpu_features();
      f.avx512_bf16 = f.avx512_bf16 && with_bf16;
      core::ScopedCpuFeaturesForTest features(f);
      ScopedRowIsa path(row_isas().back());  // the widest path (stage 2 by strips on AVX-512)
      SCOPED_TRACE(with_bf16 ? "backward bf16 on" : "backward bf16 off");
      std::vector<T> dX = dX0;
      std::vector<float> dphi(size_t(n * nd), NAN), db(size_t(n), NAN), ds(1, NAN);
      mhc_head_backward(X.data(), phi.data(), b.data(), 1.3f, dy.data(), dX.data(), dphi.data(),
                        db.data(), ds.data(), sh, nullptr, &pool);
      std::vector<float> sums = dphi;
      sums.insert(sums.end(), db.begin(), db.end());
      sums.push_back(ds[0]);
      if (first_dX.empty()) {
        first_dX = dX, first_sums = sums;
        for (size_t i = 0; i < sums.size(); ++i) ASSERT_FALSE(std::isnan(sums[i])) << "sums[" << i << "]";
      } else {
        EXPECT_TRUE(same_bytes(dX, first_dX)) << "dX differs with and without AVX512_BF16";
        EXPECT_TRUE(same_bytes(sums, first_sums)) << "dphi, db or dscale differ";
      }
    }
  }
}
TEST(Mhc, HeadPathsGiveSameBitsF32) { check_head_paths<float>(); }
TEST(Mhc, HeadPathsGiveSameBitsBf16) { check_head_paths<core::bf16>(); }

// bf16 dX that is subnormal stays subnormal: vcvtneps2bf16 would flush it to zero, so the
// AVX512_BF16 rounding of stage 2 (a strip at a time on the column path, a line at a time in
// the head's token-path groups) falls back to the integer rounding for such values. With dy = 0
// every gradient term is 0 and dX must come back unchanged, bit for bit, on both paths.
TEST(Mhc, HeadBackwardKeepsSubnormalBf16Dx) {
  const MhcShape sh = shape(300, 64, 4, 20);  // 300 tokens: the token path on 1 thread
  const int64_t n = sh.n, nd = n * sh.d;
  const auto X = random_vec<core::bf16>(sh.tokens * nd, 51, 0);
  const auto phi = random_vec<float>(n * nd, 52, 0, 1.f / std::sqrt(float(nd)));
  const auto b = random_vec<float>(n, 53, 0, 0.5f);
  const std::vector<core::bf16> dy(size_t(sh.tokens * sh.d), core::bf16{0});
  std::vector<core::bf16> dX0 = random_vec<core::bf16>(sh.tokens * nd, 54, 0);
  // Every 7th element subnormal (exponent 0, mantissa 1..127, either sign).
  for (size_t i = 0; i < dX0.size(); i += 7) dX0[i].bits = uint16_t(((i / 7) % 127 + 1) | (i % 2 ? 0x8000 : 0));
  for (int threads : {1, 3}) {  // 1: the token path; 3 (2 chunks): the column path
    SCOPED_TRACE(std::to_string(threads) + " threads");
    core::ThreadPool pool(threads);
    std::vector<core::bf16> dX = dX0;
    std::vector<float> dphi(static_cast<size_t>(n * nd)), dbias(static_cast<size_t>(n)), ds(1);
    mhc_head_backward(X.data(), phi.data(), b.data(), 1.3f, dy.data(), dX.data(), dphi.data(),
                      dbias.data(), ds.data(), sh, nullptr, &pool);
    EXPECT_TRUE(same_bytes(dX, dX0));
  }
}

TEST(Mhc, HeadBackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  MhcShape sh = shape(3, 7, 4, 20);
  const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
  auto X = random_vec<float>(tok * nd, 1, 0), dy = random_vec<float>(tok * sh.d, 2, 0);
  auto phi = random_vec<float>(n * nd, 3, 0, 1.f / std::sqrt(float(nd)));
  auto b = random_vec<float>(n, 4, 0, 0.5f);
  std::vector<float> scale = {1.3f};
  std::vector<float> dX(static_cast<size_t>(tok * nd), 0.f), dphi(static_cast<size_t>(n * nd));
  std::vector<float> db(static_cast<size_t>(n)), ds(1);
  mhc_head_backward(X.data(), phi.data(), b.data(), scale[0], dy.data(), dX.data(), dphi.data(),
                    db.data(), ds.data(), sh, nullptr, &pool);
  auto loss = [&] {
    std::vector<float> y(static_cast<size_t>(tok * sh.d)), w(static_cast<size_t>(tok * n));
    mhc_head_forward(X.data(), phi.data(), b.data(), scale[0], y.data(), w.data(), sh, &pool);
    return weighted_sum(y, dy, [](float v) { return v; });
  };
  expect_grad_matches_fd("head dX", X.data(), tok * nd, dX.data(), loss);
  expect_grad_matches_fd("head dphi", phi.data(), n * nd, dphi.data(), loss);
  expect_grad_matches_fd("head db", b.data(), n, db.data(), loss);
  expect_grad_matches_fd("head dscale", scale.data(), 1, ds.data(), loss);
}

// fp32 and bf16 streams take different paths in the backward (fp32 X is read in place and its
// dX accumulated by the GEMM), so both are checked.
template <class T>
void check_deterministic() {
  MhcShape sh = shape(131, 40, 4, 20);
  Params<T> p = make_params<T>(sh, 5, 2);
  const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d, R = sh.rows();
  std::vector<float> ref;
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    std::vector<T> y(static_cast<size_t>(tok * sh.d)), dX = p.dX0;
    std::vector<float> pre(static_cast<size_t>(tok * n)), post(pre.size());
    std::vector<float> C(static_cast<size_t>(tok * n * n)), dphi(static_cast<size_t>(R * nd));
    std::vector<float> db(static_cast<size_t>(R)), ds(3);
    mhc_pre_forward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), y.data(), pre.data(),
                    post.data(), C.data(), sh, &pool);
    mhc_pre_backward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), p.dy.data(),
                     p.dpost.data(), p.dC.data(), dX.data(), dphi.data(), db.data(), ds.data(), sh,
                     nullptr, &pool);
    std::vector<float> all = pre;
    for (const auto* v : {&post, &C, &dphi, &db, &ds}) all.insert(all.end(), v->begin(), v->end());
    for (const auto* v : {&y, &dX})
      for (T x : *v) all.push_back(val(x));
    if (threads == 1) ref = all; else EXPECT_TRUE(same_bytes(all, ref)) << threads << " threads";
  }
}

// The pre-projection computes the projections of two tokens at once; each token's sums keep the
// order of the one-token path, so a batch gives the bits of token-by-token calls (decoding).
template <class T>
void check_batched_equals_per_token() {
  MhcShape sh = shape(9, 24, 4, 20);  // nd = 96: the paired path, and an unpaired last token
  Params<T> p = make_params<T>(sh, 11, 1);
  const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
  core::ThreadPool pool(2);
  std::vector<T> y(static_cast<size_t>(tok * sh.d)), y1(y.size());
  std::vector<float> pre(static_cast<size_t>(tok * n)), post(pre.size()), pre1(pre.size()),
      post1(pre.size()), C(static_cast<size_t>(tok * n * n)), C1(C.size());
  mhc_pre_forward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), y.data(), pre.data(),
                  post.data(), C.data(), sh, &pool);
  MhcShape one = sh;
  one.tokens = 1;
  for (int64_t t = 0; t < tok; ++t)
    mhc_pre_forward(p.X.data() + t * nd, p.phi.data(), p.b.data(), p.scale.data(),
                    y1.data() + t * sh.d, pre1.data() + t * n, post1.data() + t * n,
                    C1.data() + t * n * n, one, &pool);
  EXPECT_TRUE(same_bytes(y, y1) && same_bytes(pre, pre1) && same_bytes(post, post1) &&
              same_bytes(C, C1));
}

TEST(Mhc, PreForwardBatchedEqualsPerToken) {
  check_batched_equals_per_token<float>();
  check_batched_equals_per_token<core::bf16>();
}

// The head projects 4 tokens at once (2 on a build for AVX2 alone), each token's sums in the
// one-token order: a batch gives the bits of token-by-token calls, forward and dX of the
// backward (n = 4 and n = 5, whose fifth row is a second group of rows; 11 tokens: batches and
// a remainder taken one by one).
template <class T>
void check_head_batched_equals_per_token() {
  core::ThreadPool pool(2);
  for (int n : {4, 5}) {
    MhcShape sh = shape(11, 24, n, 20);
    Params<T> p = make_params<T>(sh, 17, 1);
    const int64_t tok = sh.tokens, nd = n * sh.d;
    const float scale = 1.3f;
    std::vector<T> y(static_cast<size_t>(tok * sh.d)), y1(y.size());
    std::vector<float> w(static_cast<size_t>(tok * n)), w1(w.size());
    std::vector<T> dX = p.dX0, dX1 = p.dX0;
    std::vector<float> dphi(static_cast<size_t>(n * nd)), dphi1(dphi.size());
    std::vector<float> db(static_cast<size_t>(n)), db1(db.size()), ds(1), ds1(1);
    mhc_head_forward(p.X.data(), p.phi.data(), p.b.data(), scale, y.data(), w.data(), sh, &pool);
    mhc_head_backward(p.X.data(), p.phi.data(), p.b.data(), scale, p.dy.data(), dX.data(),
                      dphi.data(), db.data(), ds.data(), sh, nullptr, &pool);
    MhcShape one = sh;
    one.tokens = 1;
    for (int64_t t = 0; t < tok; ++t) {
      mhc_head_forward(p.X.data() + t * nd, p.phi.data(), p.b.data(), scale, y1.data() + t * sh.d,
                       w1.data() + t * n, one, &pool);
      mhc_head_backward(p.X.data() + t * nd, p.phi.data(), p.b.data(), scale, p.dy.data() + t * sh.d,
                        dX1.data() + t * nd, dphi1.data(), db1.data(), ds1.data(), one, nullptr, &pool);
    }
    EXPECT_TRUE(same_bytes(y, y1)) << "n " << n << ": y";
    EXPECT_TRUE(same_bytes(w, w1)) << "n " << n << ": w";
    EXPECT_TRUE(same_bytes(dX, dX1)) << "n " << n << ": dX";
  }
}

TEST(Mhc, HeadBatchedEqualsPerToken) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_head_batched_equals_per_token<float>();
    check_head_batched_equals_per_token<core::bf16>();
  }
}

// The head backward given the forward's projections and squares (proj) gives the bits of the
// backward that recomputes them, on every row ISA: the column path (37 and 70 tokens), the token
// path with 4- and 8-token groups and a partial last chunk (600 tokens on 2 threads), d not a
// multiple of a line (1000: the one-token stage 1), n = 5 (no line path). And it reads them:
// a changed projection changes db. Overwriting dX (MhcGradInto::kOverwrite, onto NaN) gives the
// bytes of adding onto zeros, with and without the projections, into a std::vector and into a
// 64-byte aligned array (the bf16 head's streamed dX lines).
template <class T>
void check_head_saved_projections() {
  // 520 x 4 x 512 on two threads: the token path (a 256-token chunk per thread) with rows 8 KiB
  // apart and d >= 512, where fp32's stage 2 staggers its slots (head_group_skewed): the model's
  // own shapes take it; bf16 there runs 4-token groups. One and three threads vary the split.
  for (int threads : {1, 2, 3}) {
    for (const MhcShape& sh : {shape(37, 1000, 4, 20), shape(70, 64, 4, 20), shape(600, 256, 4, 20),
                               shape(530, 64, 5, 20), shape(11, 24, 5, 20), shape(520, 512, 4, 20)}) {
      core::ThreadPool pool(threads);
      SCOPED_TRACE(name(sh) + ", " + std::to_string(threads) + " threads");
      Params<T> p = make_params<T>(sh, 23, 0);
      const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
      const float scale = 1.3f;
      std::vector<T> y(static_cast<size_t>(tok * sh.d));
      std::vector<float> w(static_cast<size_t>(tok * n));
      std::vector<float> proj(static_cast<size_t>(mhc_head_proj_floats(sh)), NAN);
      mhc_head_forward(p.X.data(), p.phi.data(), p.b.data(), scale, y.data(), w.data(), sh, &pool,
                       proj.data());
      for (size_t i = 0; i < proj.size(); ++i) ASSERT_FALSE(std::isnan(proj[i])) << "proj[" << i << "]";
      struct Grads {
        std::vector<T> dX;
        std::vector<float> dphi, db, ds;
      };
      auto backward = [&](const float* saved, const std::vector<T>& dX0,
                          MhcGradInto into = MhcGradInto::kAdd) {
        Grads g{dX0, std::vector<float>(size_t(n * nd)), std::vector<float>(size_t(n)), std::vector<float>(1)};
        mhc_head_backward(p.X.data(), p.phi.data(), p.b.data(), scale, p.dy.data(), g.dX.data(),
                          g.dphi.data(), g.db.data(), g.ds.data(), sh, nullptr, &pool, saved, into);
        return g;
      };
      const Grads fresh = backward(nullptr, p.dX0), given = backward(proj.data(), p.dX0);
      EXPECT_TRUE(same_bytes(given.dX, fresh.dX)) << "dX";
      EXPECT_TRUE(same_bytes(given.dphi, fresh.dphi)) << "dphi";
      EXPECT_TRUE(same_bytes(given.db, fresh.db)) << "db";
      EXPECT_TRUE(same_bytes(given.ds, fresh.ds)) << "dscale";
      std::vector<float> changed = proj;
      changed[0] *= 1.5f;
      EXPECT_FALSE(same_bytes(backward(changed.data(), p.dX0).db, fresh.db)) << "proj not read";
      const std::vector<T> zeros(p.dX0.size(), T{}), poison(p.dX0.size(), nan_value<T>());
      for (const float* saved : {static_cast<const float*>(nullptr), static_cast<const float*>(proj.data())}) {
        const Grads added = backward(saved, zeros), written = backward(saved, poison, MhcGradInto::kOverwrite);
        EXPECT_TRUE(same_bytes(written.dX, added.dX)) << "overwritten dX" << (saved ? " (proj)" : "");
        EXPECT_TRUE(same_bytes(written.dphi, added.dphi)) << "dphi with dX overwritten";
        // dX 64-byte aligned (as the model's arenas give it): the bf16 head's groups stream its
        // lines (store_line_cvt<true>); a std::vector's data need not be aligned so.
        const size_t nx = p.dX0.size();
        auto dx = core::aligned_array<T>(nx);
        std::fill(dx.get(), dx.get() + nx, nan_value<T>());
        std::vector<float> dphi(static_cast<size_t>(n * nd)), db(static_cast<size_t>(n)), ds(1);
        mhc_head_backward(p.X.data(), p.phi.data(), p.b.data(), scale, p.dy.data(), dx.get(), dphi.data(),
                          db.data(), ds.data(), sh, nullptr, &pool, saved, MhcGradInto::kOverwrite);
        EXPECT_TRUE(std::equal(dx.get(), dx.get() + nx, added.dX.begin(),
                               [](const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }))
            << "overwritten aligned dX" << (saved ? " (proj)" : "");
        EXPECT_TRUE(same_bytes(dphi, added.dphi)) << "dphi with aligned dX overwritten";
      }
    }
  }
}

TEST(Mhc, HeadBackwardGivenProjectionsOrOverwritingChangesNoBit) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_head_saved_projections<float>();
    check_head_saved_projections<core::bf16>();
  }
}

TEST(Mhc, DeterministicAcrossThreadCounts) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_deterministic<float>();
    check_deterministic<core::bf16>();
  }
}

// The backward runs the gates and Sinkhorn for 16 tokens side by side (one per lane): each
// lane's results are the bytes of the one-token functions the forward uses.
TEST(Mhc, SinkhornLanesGiveTheOneTokenBits) {
  constexpr int W = mhc_detail::kMixLanes;
  for (MhcShape sh : {shape(W, 8, 4, 20), shape(W, 8, 3, 5), shape(W, 8, 1, 1)}) {
    const int n = sh.n, nn = n * n, R = int(sh.rows());
    const int64_t tf = mhc_detail::trace_floats(sh);
    const std::vector<float> m = random_vec<float>(R * W, 3, 0, 1.5f);
    const std::vector<float> b = random_vec<float>(R, 4, 0, 0.5f), scale = {1.2f, 0.8f, 1.5f};
    const std::vector<float> dpre = random_vec<float>(n * W, 5, 0);
    const std::vector<float> dpost = random_vec<float>(n * W, 6, 0);
    const std::vector<float> dC = random_vec<float>(nn * W, 7, 0);
    std::vector<float> pre(n * W), post(n * W), C(nn * W), sa(n * W), sc(n * W), trace(tf * W);
    std::vector<float> dm(R * W), db(R * W), ds(3 * W);
    mhc_detail::mix_forward<W>(m.data(), b.data(), scale.data(), sh, pre.data(), post.data(),
                               C.data(), sa.data(), sc.data(), trace.data());
    mhc_detail::mix_backward<W>(m.data(), scale.data(), sa.data(), sc.data(), trace.data(),
                                dpre.data(), dpost.data(), dC.data(), sh, dm.data(), db.data(),
                                ds.data());
    for (int l = 0; l < W; ++l) {
      auto lane = [&](const std::vector<float>& v, int per) {
        std::vector<float> out(static_cast<size_t>(per));
        for (int e = 0; e < per; ++e) out[size_t(e)] = v[size_t(e * W + l)];
        return out;
      };
      const std::vector<float> m1 = lane(m, R);
      std::vector<float> pre1(n), post1(n), C1(nn), sa1(n), sc1(n), tr1(tf), dm1(R), db1(R), ds1(3);
      mhc_detail::mix_forward(m1.data(), b.data(), scale.data(), sh, pre1.data(), post1.data(),
                              C1.data(), sa1.data(), sc1.data(), tr1.data());
      mhc_detail::mix_backward(m1.data(), scale.data(), sa1.data(), sc1.data(), tr1.data(),
                               lane(dpre, n).data(), lane(dpost, n).data(), lane(dC, nn).data(),
                               sh, dm1.data(), db1.data(), ds1.data());
      const std::string tag = "n " + std::to_string(n) + " lane " + std::to_string(l);
      EXPECT_TRUE(same_bytes(pre1, lane(pre, n)) && same_bytes(post1, lane(post, n)) &&
                  same_bytes(C1, lane(C, nn)) && same_bytes(tr1, lane(trace, int(tf))))
          << tag << ": forward";
      EXPECT_TRUE(same_bytes(dm1, lane(dm, R)) && same_bytes(db1, lane(db, R)) &&
                  same_bytes(ds1, lane(ds, 3)))
          << tag << ": backward";
    }
  }
}

// Stage 2 of the pre and head backward: each element of dphi and dX is one chain over the
// tokens (or rows) in a fixed order, so the column blocking (tuned column_block: blocks that
// end inside a 16-column strip or straddle streams of d = 100) changes no bit, on any thread
// count; 300 tokens: two of dphi's 256-token chunks, the second ending in 4 tokens that are
// fewer than a group of 8. On AVX-512 one and two threads take the token path (a chunk per
// thread: stage 1 and stage 2 per group of tokens, the column_block unused) and three threads
// the column path, so the two paths are compared byte for byte, the token path also with the
// chunks split between threads.
template <class T>
void check_column_blocks(const MhcShape& sh) {
  struct Restore {
    ~Restore() { set_active_tuning(nullptr); }
  } restore;
  Params<T> p = make_params<T>(sh, 77, 1);
  const int64_t n = sh.n, nd = n * sh.d, R = sh.rows();
  std::vector<float> first, first_head;
  for (int64_t block : {0, 8, 24, 104, 392}) {
    auto t = std::make_shared<Tuning>();
    if (block > 0) {
      t->set("mhc.pre_bwd", "*", {{"column_block", block}});
      t->set("mhc.head_bwd", "*", {{"column_block", block}});
    }
    set_active_tuning(t);
    for (int threads : {1, 2, 3}) {
      core::ThreadPool pool(threads);
      const std::string tag = "column_block " + std::to_string(block) + ", " +
                              std::to_string(threads) + " threads";
      std::vector<T> dX = p.dX0;
      std::vector<float> dphi(static_cast<size_t>(R * nd)), db(static_cast<size_t>(R)), ds(3);
      mhc_pre_backward(p.X.data(), p.phi.data(), p.b.data(), p.scale.data(), p.dy.data(),
                       p.dpost.data(), p.dC.data(), dX.data(), dphi.data(), db.data(), ds.data(),
                       sh, nullptr, &pool);
      std::vector<float> all = dphi;
      for (T x : dX) all.push_back(val(x));
      if (first.empty()) first = all; else EXPECT_TRUE(same_bytes(all, first)) << tag << " (pre)";
      std::vector<T> dXh = p.dX0;
      std::vector<float> dphih(static_cast<size_t>(n * nd)), dbh(static_cast<size_t>(n)), dsh(1);
      mhc_head_backward(p.X.data(), p.phi.data(), p.b.data(), 1.3f, p.dy.data(), dXh.data(),
                        dphih.data(), dbh.data(), dsh.data(), sh, nullptr, &pool);
      all = dphih;
      for (T x : dXh) all.push_back(val(x));
      if (first_head.empty()) first_head = all;
      else EXPECT_TRUE(same_bytes(all, first_head)) << tag << " (head)";
    }
  }
}

TEST(Mhc, BackwardColumnBlocksChangeNoBit) {
  for (core::Isa isa : row_isas()) {
    if (isa != core::Isa::kAvx512) continue;  // the fused stage 2 (the GEMM path blocks K)
    ScopedRowIsa path(isa);
    // 301 tokens of d 33: masked strips, and remainders after the 4- and 8-token groups.
    // d 64 (a multiple of 32): the head's groups take head_group (every strip full; bf16 on a
    // CPU with AVX512_BF16), compared with the column path's strips. d 512: fp32 rows of 8 KiB,
    // whose groups take head_group_skewed (the tokens' strips skewed along the row), with a
    // remainder of 4 tokens after the second chunk's groups of 8.
    for (const MhcShape& sh : {shape(300, 100, 4, 20), shape(301, 33, 4, 20), shape(300, 64, 4, 20),
                               shape(300, 512, 4, 20)}) {
      check_column_blocks<float>(sh);
      check_column_blocks<core::bf16>(sh);
    }
  }
}

// A token-path call whose packed phi and chunk sums pass what a thread keeps between calls
// (mhc_detail::kKeptPackFloats, 4 MiB) runs on a buffer of its own, freed on return (reviewer
// 3, session 12: the kept buffer only grew, ~50 MB after one 32K-token call). Its bits are the
// column path's, and a small call between two large ones (which reuses the kept buffer) changes
// none of them.
template <class T>
void check_large_token_call() {
  const MhcShape big = shape(2560, 1024, 4, 20), small = shape(300, 100, 4, 20);
  const int64_t R = big.rows();
  ASSERT_GT(size_t(mhc_detail::projection_pack_floats(big.n, big.d, int(R)) * (2560 / 256 + 1)),
            mhc_detail::kKeptPackFloats);
  ASSERT_LE(size_t(mhc_detail::projection_pack_floats(small.n, small.d, int(small.rows())) * 3),
            mhc_detail::kKeptPackFloats);
  Params<T> p = make_params<T>(big, 91, 1), q = make_params<T>(small, 92, 1);
  auto run = [](const Params<T>& pp, const MhcShape& sh, int threads) {
    core::ThreadPool pool(threads);
    const int64_t rows = sh.rows(), w = sh.n * sh.d;
    std::vector<T> dX = pp.dX0;
    std::vector<float> dphi(static_cast<size_t>(rows * w)), db(static_cast<size_t>(rows)), ds(3);
    mhc_pre_backward(pp.X.data(), pp.phi.data(), pp.b.data(), pp.scale.data(), pp.dy.data(),
                     pp.dpost.data(), pp.dC.data(), dX.data(), dphi.data(), db.data(), ds.data(), sh,
                     nullptr, &pool);
    std::vector<T> dXh = pp.dX0;
    std::vector<float> dphih(static_cast<size_t>(sh.n * w)), dbh(static_cast<size_t>(sh.n)), dsh(1);
    mhc_head_backward(pp.X.data(), pp.phi.data(), pp.b.data(), 1.3f, pp.dy.data(), dXh.data(),
                      dphih.data(), dbh.data(), dsh.data(), sh, nullptr, &pool);
    std::vector<float> all = dphi;
    all.insert(all.end(), dphih.begin(), dphih.end());
    for (T x : dX) all.push_back(val(x));
    for (T x : dXh) all.push_back(val(x));
    return all;
  };
  ASSERT_TRUE(mhc_backward_runs_by_tokens(big.tokens, 2));
  ASSERT_FALSE(mhc_backward_runs_by_tokens(big.tokens, 11));
  const std::vector<float> columns = run(p, big, 11);  // 10 chunks for 11 threads: the column path
  const std::vector<float> tokens = run(p, big, 2);
  EXPECT_TRUE(same_bytes(tokens, columns)) << "token path, own buffer vs column path";
  const std::vector<float> small_first = run(q, small, 1);
  EXPECT_TRUE(same_bytes(run(p, big, 1), columns)) << "after a small call";
  EXPECT_TRUE(same_bytes(run(q, small, 2), small_first)) << "small call after a large one";
}

TEST(Mhc, ALargeTokenCallKeepsNoBufferAndChangesNoBit) {
  if (!core::isa_supported(core::Isa::kAvx512)) {  // no token path here: rows never run AVX-512
    EXPECT_FALSE(mhc_backward_runs_by_tokens(1 << 20, 1));
    return;
  }
  ScopedRowIsa path(core::Isa::kAvx512);
  check_large_token_call<float>();
  check_large_token_call<core::bf16>();
}

}  // namespace
}  // namespace trex::kernels
