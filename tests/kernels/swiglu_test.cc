// Limited SwiGLU: fused vs the eager reference chain, finite differences of the closed-form
// backward against a double-precision forward, the clamp boundaries (gradient passes at
// equality), candidate gating (NaN-poisoned outputs, inputs unchanged) and bit-identical results
// across thread counts, each on every vector path the CPU has (AVX2, AVX-512: row_isa.h).
//
// Tolerances (|fused - ref| <= atol + rtol |ref|): fp32 1e-4 (the KernelBench gate; the fused
// kernel's polynomial exp is within a few ulp of std::exp, and the two compute the same products
// in a different order); bf16 storage 1e-2 (one bf16 ulp is 0.4% relative, and a value may round
// to either side). dw is an fp32 row sum in both dtypes: 1e-4 (1e-3 for bf16: its terms reach
// |dh a| ~ 100 with L = 10, so fp32 order effects are ~1e-5 relative of the largest term).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/cpu_features_override.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/swiglu.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

using core::bf16;

struct Shape2 {
  int64_t rows, cols;
};
const Shape2 kShapes[] = {{1, 1}, {3, 7}, {5, 33}, {2, 4097}, {17, 64}, {4, 128}};
constexpr float kL = kSwigluLimit;

// Gate and up spread over N(0, 8^2) so ~20% of values lie beyond the limits, plus exact +-L.
template <class T>
std::vector<T> gate_like(int64_t n, uint32_t seed, int dist) {
  auto v = random_vec<T>(n, seed, dist, 8.f);
  if (n > 3) v[1] = from<T>(kL), v[2] = from<T>(-kL);
  return v;
}

template <class T>
void check_against_ref(bool routed, double tol, double dw_tol) {
  core::ThreadPool pool(2);
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    uint32_t seed = 11;
    for (const Shape2& s : kShapes) {
      for (int dist = 0; dist < 4; ++dist, ++seed) {
        int64_t n = s.rows * s.cols;
        std::string tag = std::string(core::to_string(isa)) + (routed ? " routed [" : " shared [") +
                          std::to_string(s.rows) + ", " + std::to_string(s.cols) + "] dist " +
                          std::to_string(dist);
        auto g = gate_like<T>(n, seed, dist), u = gate_like<T>(n, seed + 500, dist);
        auto dh = random_vec<T>(n, seed + 1000, 0);
        auto wv = random_vec<float>(s.rows, seed + 2000, 1);
        const float* w = routed ? wv.data() : nullptr;
        auto g0 = g, u0 = u, dh0 = dh, w0 = wv;
        // Outputs start as NaN: a kernel that skips an element leaves a NaN behind.
        std::vector<T> o(size_t(n), nan_value<T>()), orf(size_t(n), nan_value<T>());
        std::vector<T> dg(size_t(n), nan_value<T>()), dgr(size_t(n), nan_value<T>());
        std::vector<T> du(size_t(n), nan_value<T>()), dur(size_t(n), nan_value<T>());
        std::vector<float> dw(size_t(s.rows), NAN), dwr(size_t(s.rows), NAN);
        float* dwp = routed ? dw.data() : nullptr;
        float* dwrp = routed ? dwr.data() : nullptr;
        swiglu_forward(g.data(), u.data(), w, o.data(), s.rows, s.cols, kL, &pool);
        swiglu_forward_ref(g.data(), u.data(), w, orf.data(), s.rows, s.cols, kL, &pool);
        swiglu_backward(g.data(), u.data(), w, dh.data(), dg.data(), du.data(), dwp, s.rows,
                        s.cols, kL, &pool);
        swiglu_backward_ref(g.data(), u.data(), w, dh.data(), dgr.data(), dur.data(), dwrp, s.rows,
                            s.cols, kL, &pool);
        for (size_t i = 0; i < o.size(); ++i) {
          ASSERT_FALSE(std::isnan(val(o[i]))) << tag << " out[" << i << "] not written";
          ASSERT_FALSE(std::isnan(val(dg[i]))) << tag << " dg[" << i << "] not written";
          ASSERT_FALSE(std::isnan(val(du[i]))) << tag << " du[" << i << "] not written";
        }
        EXPECT_TRUE(same_bytes(g, g0) && same_bytes(u, u0) && same_bytes(dh, dh0) &&
                    same_bytes(wv, w0))
            << tag << ": an input changed";
        expect_close(o, orf, tol, tag + " out");
        expect_close(dg, dgr, tol, tag + " dg");
        expect_close(du, dur, tol, tag + " du");
        if (routed) expect_close(dw, dwr, dw_tol, tag + " dw");
      }
    }
  }
}

TEST(Swiglu, SharedF32MatchesReference) { check_against_ref<float>(false, 1e-4, 1e-4); }
TEST(Swiglu, RoutedF32MatchesReference) { check_against_ref<float>(true, 1e-4, 1e-4); }
TEST(Swiglu, SharedBf16MatchesReference) { check_against_ref<bf16>(false, 1e-2, 1e-3); }
TEST(Swiglu, RoutedBf16MatchesReference) { check_against_ref<bf16>(true, 1e-2, 1e-3); }
// AVX-512 CPUs without AVX512_BF16 round bf16 outputs with integer operations: that path too,
// on a CPU that has the conversion instruction (elsewhere the tests above already take it).
TEST(Swiglu, Bf16MatchesReferenceWithoutAvx512Bf16) {
  if (!core::cpu_features().avx512_bf16) GTEST_SKIP() << "no AVX512_BF16: the tests above run this path";
  core::CpuFeatures no_bf16 = core::cpu_features();
  no_bf16.avx512_bf16 = false;
  core::ScopedCpuFeaturesForTest features(no_bf16);
  ASSERT_FALSE(core::cpu_features().avx512_bf16);
  check_against_ref<bf16>(false, 1e-2, 1e-3);
  check_against_ref<bf16>(true, 1e-2, 1e-3);
}

// loss = sum(dh * w a) in double.
double loss(const std::vector<double>& g, const std::vector<double>& u,
            const std::vector<double>& w, const std::vector<double>& dh, int64_t rows,
            int64_t cols) {
  double l = 0, L = kL;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      size_t i = size_t(r * cols + j);
      double gc = std::min(g[i], L), uc = std::clamp(u[i], -L, L);
      l += dh[i] * w[size_t(r)] * gc / (1 + std::exp(-gc)) * uc;
    }
  return l;
}

// Central differences (h = 1e-4: truncation ~h^2 |third derivative| ~ 1e-8, rounding
// ~1e-16 / h) of the double forward against the fp32 fused backward (error ~1e-6 relative):
// tolerance 1e-4 of max(1, |grad|). Points within 1e-3 of a kink (g = L, u = +-L) are skipped:
// there the difference quotient straddles two pieces; ClampBoundaries checks them exactly.
TEST(Swiglu, BackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  const Shape2 shapes[] = {{1, 1}, {3, 7}, {2, 33}};
  uint32_t seed = 300;
  for (const Shape2& s : shapes) {
    ++seed;
    int64_t n = s.rows * s.cols;
    auto g = random_vec<float>(n, seed, 0, 8.f), u = random_vec<float>(n, seed + 1, 0, 8.f);
    auto dh = random_vec<float>(n, seed + 2, 0), w = random_vec<float>(s.rows, seed + 3, 1);
    std::vector<float> dg(static_cast<size_t>(n)), du(static_cast<size_t>(n));
    std::vector<float> dw(static_cast<size_t>(s.rows));
    swiglu_backward(g.data(), u.data(), w.data(), dh.data(), dg.data(), du.data(), dw.data(),
                    s.rows, s.cols, kL, &pool);
    std::vector<double> gd(g.begin(), g.end()), ud(u.begin(), u.end());
    std::vector<double> dhd(dh.begin(), dh.end()), wd(w.begin(), w.end());
    auto fd = [&](std::vector<double>& v, size_t i) {
      const double h = 1e-4, keep = v[i];
      v[i] = keep + h;
      double lp = loss(gd, ud, wd, dhd, s.rows, s.cols);
      v[i] = keep - h;
      double lm = loss(gd, ud, wd, dhd, s.rows, s.cols);
      v[i] = keep;
      return (lp - lm) / (2 * h);
    };
    auto near_kink = [](double v) { return std::fabs(std::fabs(v) - kL) < 1e-3; };
    for (size_t i = 0; i < size_t(n); ++i) {
      if (!near_kink(gd[i])) {
        double f = fd(gd, i);
        EXPECT_NEAR(dg[i], f, 1e-4 * std::max(1.0, std::fabs(f))) << "dg[" << i << "]";
      }
      if (!near_kink(ud[i])) {
        double f = fd(ud, i);
        EXPECT_NEAR(du[i], f, 1e-4 * std::max(1.0, std::fabs(f))) << "du[" << i << "]";
      }
    }
    for (size_t r = 0; r < size_t(s.rows); ++r) {
      double f = fd(wd, r);
      EXPECT_NEAR(dw[r], f, 1e-4 * std::max(1.0, std::fabs(f))) << "dw[" << r << "]";
    }
  }
}

// At the limits the gradient passes (as torch.clamp); beyond them it is exactly zero. The same
// 8 cases run in the SIMD body (lanes 0..7) and again in the scalar tail (lanes 8..15).
TEST(Swiglu, ClampBoundaries) {
  core::ThreadPool pool(1);
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    const float gs[] = {kL, kL + 1, 1.f, 1.f, 1.f, 1.f, -200.f, 3.f};
    const float us[] = {2.f, 2.f, kL, -kL, kL + 0.5f, -kL - 0.5f, 1.f, 1.f};
    std::vector<float> g(gs, gs + 8), u(us, us + 8);
    g.insert(g.end(), gs, gs + 7), u.insert(u.end(), us, us + 7);  // 15: the copy is all tail
    size_t n = g.size();
    std::vector<float> dh(n, 1.f), dg(n, NAN), du(n, NAN), out(n, NAN);
    swiglu_forward(g.data(), u.data(), nullptr, out.data(), 1, int64_t(n), kL, &pool);
    swiglu_backward(g.data(), u.data(), nullptr, dh.data(), dg.data(), du.data(), nullptr, 1,
                    int64_t(n), kL, &pool);
    for (size_t b : {size_t(0), size_t(8)}) {
      EXPECT_NE(dg[b + 0], 0.f) << b;  // g == L passes
      EXPECT_EQ(dg[b + 1], 0.f) << b;  // g > L blocked
      EXPECT_NE(du[b + 2], 0.f) << b;  // u == L passes
      EXPECT_NE(du[b + 3], 0.f) << b;  // u == -L passes
      EXPECT_EQ(du[b + 4], 0.f) << b;
      EXPECT_EQ(du[b + 5], 0.f) << b;
      // g beyond the limit still contributes silu(L) through the product.
      EXPECT_NEAR(out[b + 1], kL / (1 + std::exp(-kL)) * 2.f, 1e-4) << b;
      EXPECT_NEAR(out[b + 4], 1.f / (1 + std::exp(-1.f)) * kL, 1e-5) << b;
      EXPECT_NEAR(out[b + 6], 0.f, 1e-30) << b;  // very negative gate: no overflow, no NaN
      EXPECT_FALSE(std::isnan(dg[b + 6])) << b;
    }
  }
}

// Outputs of 8 MiB and more on 32-byte boundaries take the non-temporal store path.
template <class T>
void check_streaming_path() {
  core::ThreadPool pool(2);
  const int64_t cols = 1024, rows = int64_t((size_t(9) << 20) / sizeof(T)) / cols;
  const int64_t n = rows * cols;
  auto gs = gate_like<T>(n, 51, 0), us = gate_like<T>(n, 52, 0), dhs = random_vec<T>(n, 53, 0);
  auto w = random_vec<float>(rows, 54, 1);
  auto g = core::aligned_array<T>(size_t(n)), u = core::aligned_array<T>(size_t(n));
  auto dh = core::aligned_array<T>(size_t(n)), o = core::aligned_array<T>(size_t(n));
  auto dg = core::aligned_array<T>(size_t(n)), du = core::aligned_array<T>(size_t(n));
  std::copy(gs.begin(), gs.end(), g.get());
  std::copy(us.begin(), us.end(), u.get());
  std::copy(dhs.begin(), dhs.end(), dh.get());
  std::vector<T> orf(static_cast<size_t>(n)), dgr(orf.size()), dur(orf.size());
  std::vector<float> dw(static_cast<size_t>(rows)), dwr(static_cast<size_t>(rows));
  swiglu_forward_ref(gs.data(), us.data(), w.data(), orf.data(), rows, cols, kL, &pool);
  swiglu_backward_ref(gs.data(), us.data(), w.data(), dhs.data(), dgr.data(), dur.data(),
                      dwr.data(), rows, cols, kL, &pool);
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-2;
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    for (T* p : {o.get(), dg.get(), du.get()}) std::fill(p, p + n, nan_value<T>());
    swiglu_forward(g.get(), u.get(), w.data(), o.get(), rows, cols, kL, &pool);
    swiglu_backward(g.get(), u.get(), w.data(), dh.get(), dg.get(), du.get(), dw.data(), rows,
                    cols, kL, &pool);
    expect_close(std::vector<T>(o.get(), o.get() + n), orf, tol, "streamed out");
    expect_close(std::vector<T>(dg.get(), dg.get() + n), dgr, tol, "streamed dg");
    expect_close(std::vector<T>(du.get(), du.get() + n), dur, tol, "streamed du");
    expect_close(dw, dwr, 1e-3, "dw");
  }
}

// A bf16 row is the fp32 row of the widened inputs, rounded, up to the bf16 rows' cheaper sigmoid
// (swiglu.cc's sigmoid16_bf16 on AVX-512, within 1e-4 relative of the exact one in the forward and
// 1e-5 in the backward; the AVX2 and scalar paths use the exact one): every output is the fp32
// result's rounding or a bf16 neighbour of it, at least 95% are its rounding (a sigmoid off by
// 1e-3 would still stay within a neighbour but miss far more often), and dw moves by at most 2e-5
// of the sum of its terms' magnitudes. On every path (the 32-wide bf16 steps included), streamed
// or not. Some results are denormal (silu(-20) times an up of 1e-32), which the 32-wide steps
// round without the CPU's conversion.
bool same_or_neighbour(bf16 got, bf16 want) {
  if (got.bits == want.bits) return true;
  // Same sign, magnitudes one bf16 step apart (bf16 bit patterns of one sign are ordered).
  return (got.bits & 0x8000) == (want.bits & 0x8000) &&
         std::abs(int(got.bits & 0x7fff) - int(want.bits & 0x7fff)) == 1;
}

void check_bf16_is_rounded_f32(int64_t rows, int64_t cols, bool aligned) {
  core::ThreadPool pool(2);
  const int64_t n = rows * cols;
  auto gb = gate_like<bf16>(n, 81, 0), ub = gate_like<bf16>(n, 82, 2), dhb = random_vec<bf16>(n, 83, 0);
  for (int64_t i = 5; i < n; i += 37) gb[size_t(i)] = core::to_bf16(-20.f), ub[size_t(i)] = core::to_bf16(1e-32f);
  auto w = random_vec<float>(rows, 84, 1);
  std::vector<float> gf(static_cast<size_t>(n)), uf(static_cast<size_t>(n)), dhf(static_cast<size_t>(n));
  for (size_t i = 0; i < size_t(n); ++i)
    gf[i] = core::to_float(gb[i]), uf[i] = core::to_float(ub[i]), dhf[i] = core::to_float(dhb[i]);
  // Sum over each row of |dh w silu(gc) uc|: the scale of dw's change.
  std::vector<double> dw_scale(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t i = size_t(r * cols + j);
      const double gc = std::min(double(gf[i]), double(kL)), uc = std::clamp(double(uf[i]), -double(kL), double(kL));
      dw_scale[size_t(r)] += std::fabs(dhf[i] * gc / (1 + std::exp(-gc)) * uc);
    }
  // Outputs on 32-byte boundaries (aligned) or one element past one.
  auto ob = core::aligned_array<bf16>(size_t(n) + 16), dgb = core::aligned_array<bf16>(size_t(n) + 16);
  auto dub = core::aligned_array<bf16>(size_t(n) + 16);
  const size_t off = aligned ? 0 : 1;
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(std::string(core::to_string(isa)) + (aligned ? " aligned" : " unaligned"));
    std::vector<float> of(static_cast<size_t>(n)), dgf(of.size()), duf(of.size()), dwf(static_cast<size_t>(rows)), dw(dwf.size());
    swiglu_forward(gf.data(), uf.data(), w.data(), of.data(), rows, cols, kL, &pool);
    swiglu_backward(gf.data(), uf.data(), w.data(), dhf.data(), dgf.data(), duf.data(), dwf.data(),
                    rows, cols, kL, &pool);
    swiglu_forward(gb.data(), ub.data(), w.data(), ob.get() + off, rows, cols, kL, &pool);
    swiglu_backward(gb.data(), ub.data(), w.data(), dhb.data(), dgb.get() + off, dub.get() + off,
                    dw.data(), rows, cols, kL, &pool);
    int denormal = 0;
    int64_t rounded = 0;
    for (size_t i = 0; i < size_t(n); ++i) {
      denormal += std::fpclassify(of[i]) == FP_SUBNORMAL;
      const bf16 o = core::to_bf16(of[i]), dg = core::to_bf16(dgf[i]), du = core::to_bf16(duf[i]);
      ASSERT_TRUE(same_or_neighbour(ob[off + i], o)) << "out[" << i << "] " << of[i];
      ASSERT_TRUE(same_or_neighbour(dgb[off + i], dg)) << "dg[" << i << "] " << dgf[i];
      ASSERT_TRUE(same_or_neighbour(dub[off + i], du)) << "du[" << i << "] " << duf[i];
      rounded += (ob[off + i].bits == o.bits) + (dgb[off + i].bits == dg.bits) + (dub[off + i].bits == du.bits);
    }
    EXPECT_GE(double(rounded), 0.95 * 3.0 * double(n)) << "outputs equal to the fp32 result's rounding";
    EXPECT_GT(denormal, 0) << "no denormal result: the test lost its purpose";
    for (size_t r = 0; r < size_t(rows); ++r)
      EXPECT_LE(std::fabs(double(dw[r]) - double(dwf[r])), 2e-5 * dw_scale[r] + 1e-30) << "dw[" << r << "]";
  }
}

TEST(Swiglu, Bf16WithinAnUlpOfF32) {
  check_bf16_is_rounded_f32(7, 97, true);    // 32-wide steps, a 16-lane step and a masked tail
  check_bf16_is_rounded_f32(3, 4096, false);
  check_bf16_is_rounded_f32(4608, 1024, true);  // 9 MiB of bf16: streamed
}

TEST(Swiglu, StreamingStorePathF32) { check_streaming_path<float>(); }
TEST(Swiglu, StreamingStorePathBf16) { check_streaming_path<bf16>(); }

template <class T>
void check_thread_determinism() {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    const int64_t rows = 300, cols = 97;
    auto g = gate_like<T>(rows * cols, 5, 2), u = gate_like<T>(rows * cols, 6, 0);
    auto dh = random_vec<T>(rows * cols, 7, 0);
    auto w = random_vec<float>(rows, 8, 1);
    std::vector<T> o1, dg1, du1;
    std::vector<float> dw1;
    for (int threads : {1, 2, 3}) {
      core::ThreadPool pool(threads);
      std::vector<T> o(static_cast<size_t>(rows * cols)), dg(o.size()), du(o.size());
      std::vector<float> dw(static_cast<size_t>(rows));
      swiglu_forward(g.data(), u.data(), w.data(), o.data(), rows, cols, kL, &pool);
      swiglu_backward(g.data(), u.data(), w.data(), dh.data(), dg.data(), du.data(), dw.data(),
                      rows, cols, kL, &pool);
      if (threads == 1) {
        o1 = o, dg1 = dg, du1 = du, dw1 = dw;
        continue;
      }
      EXPECT_TRUE(same_bytes(o, o1) && same_bytes(dg, dg1) && same_bytes(du, du1) &&
                  same_bytes(dw, dw1))
          << threads << " threads";
    }
  }
}

TEST(Swiglu, BitIdenticalAcrossThreadCountsF32) { check_thread_determinism<float>(); }
TEST(Swiglu, BitIdenticalAcrossThreadCountsBf16) { check_thread_determinism<bf16>(); }

}  // namespace
}  // namespace trex::kernels
