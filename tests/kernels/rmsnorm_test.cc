// RMSNorm (weight-free and weighted): fused vs the eager reference chain, finite differences of
// the backward against a double-precision forward, candidate gating (NaN-poisoned outputs,
// inputs unchanged) and bit-identical results across thread counts.
//
// Tolerances (|fused - ref| <= atol + rtol |ref|): fp32 atol = rtol = 1e-4 (the KernelBench gate;
// the two differ only in summation order, ~1e-6 relative); bf16 storage 1e-2 (one bf16 ulp is
// 2^-8 = 0.4% relative, and fused and reference may round a value on either side of a tie); dw is
// fp32 in both dtypes and summed in a different order (chunks of 64 rows vs row by row): 1e-4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/cpu_features_override.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

using core::bf16;

struct Shape2 {
  int64_t rows, dim;
};
const Shape2 kShapes[] = {{1, 1}, {3, 7}, {5, 33}, {2, 4097}, {130, 64}, {65, 8}, {4, 128}};

// Fused vs reference for forward and backward, one dtype, weighted or not, with gating.
template <class T>
void check_against_ref(bool weighted, double tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 1;
  for (const Shape2& s : kShapes) {
    for (int dist = 0; dist < 4; ++dist, ++seed) {
      int64_t n = s.rows * s.dim;
      std::string tag = std::string(weighted ? "weighted" : "weight-free") + " [" +
                        std::to_string(s.rows) + ", " + std::to_string(s.dim) + "] dist " +
                        std::to_string(dist);
      auto x = random_vec<T>(n, seed, dist), dy = random_vec<T>(n, seed + 1000, 0);
      auto wv = random_vec<float>(s.dim, seed + 2000, 1);
      const float* w = weighted ? wv.data() : nullptr;
      auto x0 = x, dy0 = dy, w0 = wv;
      // Outputs start as NaN: a kernel that skips an element leaves a NaN behind.
      std::vector<T> y(size_t(n), nan_value<T>()), yr(size_t(n), nan_value<T>());
      std::vector<T> dx(size_t(n), nan_value<T>()), dxr(size_t(n), nan_value<T>());
      std::vector<float> dw(size_t(s.dim), NAN), dwr(size_t(s.dim), NAN);
      rmsnorm_forward(x.data(), w, y.data(), s.rows, s.dim, kRmsNormEps, &pool);
      rmsnorm_forward_ref(x.data(), w, yr.data(), s.rows, s.dim, kRmsNormEps, &pool);
      rmsnorm_backward(x.data(), w, dy.data(), dx.data(), weighted ? dw.data() : nullptr, s.rows,
                       s.dim, kRmsNormEps, &pool);
      rmsnorm_backward_ref(x.data(), w, dy.data(), dxr.data(), weighted ? dwr.data() : nullptr,
                           s.rows, s.dim, kRmsNormEps, &pool);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_FALSE(std::isnan(val(y[i]))) << tag << " y[" << i << "] not written";
        ASSERT_FALSE(std::isnan(val(dx[i]))) << tag << " dx[" << i << "] not written";
      }
      EXPECT_TRUE(same_bytes(x, x0) && same_bytes(dy, dy0) && same_bytes(wv, w0))
          << tag << ": an input changed";
      expect_close(y, yr, tol, tag + " y");
      expect_close(dx, dxr, tol, tag + " dx");
      if (weighted) expect_close(dw, dwr, 1e-4, tag + " dw");
    }
  }
}

// Under every vector path of the row kernels (row_isa.h; bf16 rows have a 16-lane one).
template <class T>
void check_against_ref_every_path(bool weighted, double tol) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_against_ref<T>(weighted, tol);
  }
}

TEST(RmsNorm, WeightFreeF32MatchesReference) { check_against_ref<float>(false, 1e-4); }
TEST(RmsNorm, WeightedF32MatchesReference) { check_against_ref<float>(true, 1e-4); }
TEST(RmsNorm, WeightFreeBf16MatchesReference) { check_against_ref_every_path<bf16>(false, 1e-2); }
TEST(RmsNorm, WeightedBf16MatchesReference) { check_against_ref_every_path<bf16>(true, 1e-2); }

// loss = sum(dy * y(x, w)) in double: its gradient in x is dx and in w is dw.
double loss(const std::vector<double>& x, const std::vector<double>& w, bool weighted,
            const std::vector<double>& dy, int64_t rows, int64_t dim) {
  double l = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < dim; ++j) ss += x[size_t(r * dim + j)] * x[size_t(r * dim + j)];
    double rs = 1.0 / std::sqrt(ss / double(dim) + double(kRmsNormEps));
    for (int64_t j = 0; j < dim; ++j) {
      size_t i = size_t(r * dim + j);
      l += dy[i] * x[i] * rs * (weighted ? w[size_t(j)] : 1.0);
    }
  }
  return l;
}

// Central differences of the double forward (h = 1e-5 relative to the value's scale: truncation
// ~h^2 = 1e-10, rounding ~1e-16 / h = 1e-11) against the fp32 fused backward, whose own error is
// ~1e-6 relative: tolerance 2e-4 (absolute + relative to the largest gradient of the row).
TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  const Shape2 shapes[] = {{1, 1}, {3, 7}, {2, 33}, {70, 3}};
  uint32_t seed = 77;
  for (const Shape2& s : shapes) {
    for (bool weighted : {false, true}) {
      ++seed;
      int64_t n = s.rows * s.dim;
      auto x = random_vec<float>(n, seed, 0), dy = random_vec<float>(n, seed + 1, 0);
      auto w = random_vec<float>(s.dim, seed + 2, 1);
      std::vector<float> dx(static_cast<size_t>(n)), dw(static_cast<size_t>(s.dim));
      rmsnorm_backward(x.data(), weighted ? w.data() : nullptr, dy.data(), dx.data(),
                       weighted ? dw.data() : nullptr, s.rows, s.dim, kRmsNormEps, &pool);
      std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), wd(w.begin(), w.end());
      double gmax = 1.0;
      for (float v : dx) gmax = std::max(gmax, double(std::fabs(v)));
      for (int64_t i = 0; i < n; ++i) {
        double h = 1e-5 * std::max(1.0, std::fabs(xd[size_t(i)])), keep = xd[size_t(i)];
        xd[size_t(i)] = keep + h;
        double lp = loss(xd, wd, weighted, dyd, s.rows, s.dim);
        xd[size_t(i)] = keep - h;
        double lm = loss(xd, wd, weighted, dyd, s.rows, s.dim);
        xd[size_t(i)] = keep;
        double fd = (lp - lm) / (2 * h);
        EXPECT_NEAR(dx[size_t(i)], fd, 2e-4 * gmax) << "dx[" << i << "] dim " << s.dim;
      }
      if (!weighted) continue;
      for (int64_t j = 0; j < s.dim; ++j) {
        double h = 1e-5 * std::max(1.0, std::fabs(wd[size_t(j)])), keep = wd[size_t(j)];
        wd[size_t(j)] = keep + h;
        double lp = loss(xd, wd, true, dyd, s.rows, s.dim);
        wd[size_t(j)] = keep - h;
        double lm = loss(xd, wd, true, dyd, s.rows, s.dim);
        wd[size_t(j)] = keep;
        double fd = (lp - lm) / (2 * h);
        EXPECT_NEAR(dw[size_t(j)], fd, 2e-4 * std::max(1.0, std::fabs(fd))) << "dw[" << j << "]";
      }
    }
  }
}

// The same inputs give bit-identical outputs (dw included) with 1, 2 and 3 threads.
template <class T>
void check_thread_determinism() {
  const int64_t rows = 300, dim = 97;
  auto x = random_vec<T>(rows * dim, 5, 2), dy = random_vec<T>(rows * dim, 6, 0);
  auto w = random_vec<float>(dim, 7, 1);
  std::vector<T> y1, dx1;
  std::vector<float> dw1;
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    std::vector<T> y(static_cast<size_t>(rows * dim)), dx(static_cast<size_t>(rows * dim));
    std::vector<float> dw(static_cast<size_t>(dim));
    rmsnorm_forward(x.data(), w.data(), y.data(), rows, dim, kRmsNormEps, &pool);
    rmsnorm_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), rows, dim, kRmsNormEps,
                     &pool);
    if (threads == 1) {
      y1 = y, dx1 = dx, dw1 = dw;
      continue;
    }
    EXPECT_TRUE(same_bytes(y, y1)) << threads << " threads";
    EXPECT_TRUE(same_bytes(dx, dx1)) << threads << " threads";
    EXPECT_TRUE(same_bytes(dw, dw1)) << threads << " threads";
  }
}

TEST(RmsNorm, BitIdenticalAcrossThreadCountsF32) { check_thread_determinism<float>(); }
TEST(RmsNorm, BitIdenticalAcrossThreadCountsBf16) { check_thread_determinism<bf16>(); }

// Outputs of 8 MiB and more on 32-byte boundaries take the non-temporal store path: it must give
// the same results as the reference (and write every element) too.
template <class T>
void check_streaming_path() {
  core::ThreadPool pool(2);
  const int64_t dim = 1024, rows = int64_t((size_t(9) << 20) / sizeof(T)) / dim;
  const int64_t n = rows * dim;
  auto xs = random_vec<T>(n, 41, 0), dys = random_vec<T>(n, 42, 0);
  auto w = random_vec<float>(dim, 43, 1);
  auto x = core::aligned_array<T>(size_t(n)), dy = core::aligned_array<T>(size_t(n));
  auto y = core::aligned_array<T>(size_t(n)), dx = core::aligned_array<T>(size_t(n));
  std::copy(xs.begin(), xs.end(), x.get());
  std::copy(dys.begin(), dys.end(), dy.get());
  std::fill(y.get(), y.get() + n, nan_value<T>());
  std::fill(dx.get(), dx.get() + n, nan_value<T>());
  std::vector<T> yr(static_cast<size_t>(n)), dxr(static_cast<size_t>(n));
  std::vector<float> dw(static_cast<size_t>(dim)), dwr(static_cast<size_t>(dim));
  rmsnorm_forward(x.get(), w.data(), y.get(), rows, dim, kRmsNormEps, &pool);
  rmsnorm_backward(x.get(), w.data(), dy.get(), dx.get(), dw.data(), rows, dim, kRmsNormEps, &pool);
  rmsnorm_forward_ref(xs.data(), w.data(), yr.data(), rows, dim, kRmsNormEps, &pool);
  rmsnorm_backward_ref(xs.data(), w.data(), dys.data(), dxr.data(), dwr.data(), rows, dim,
                       kRmsNormEps, &pool);
  double tol = std::is_same_v<T, float> ? 1e-4 : 1e-2;
  expect_close(std::vector<T>(y.get(), y.get() + n), yr, tol, "streamed y");
  expect_close(std::vector<T>(dx.get(), dx.get() + n), dxr, tol, "streamed dx");
  // dw sums 9 MiB worth of rows in a different order: relative 1e-4 of its magnitude ~sqrt(rows).
  expect_close(dw, dwr, 1e-3, "dw");
}

TEST(RmsNorm, StreamingStorePathF32) { check_streaming_path<float>(); }
TEST(RmsNorm, StreamingStorePathBf16) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_streaming_path<bf16>();
  }
}

// The 16-lane rows (AVX-512: bf16, and the fp32 forward, which overlaps a row's output with the
// next row's sum, and keeps the passes apart for rows of 256 elements and more over 4 MiB of x a
// thread: the 9 MiB normal-store case below) give the 8-lane rows' bits: y, dx and dw byte for
// byte, for row lengths around
// the 8- and 16-element steps and the bf16 forward's 32-element lines (57: a line, a 16-step, an
// 8-step, a scalar), the 8-lane rows' scalar tails included, weighted or not, plain
// and streamed stores, with outputs that are denormal (tiny weights: for bf16 the vcvtneps2bf16
// store falls back to the integer rounding there). 37 rows in blocks of several rows (the
// built-in 16384 elements), so rows are paired with their next row (the bf16 backward: pairs of
// rows with the next pair's sums, an odd row last), and 1 row alone; the streamed case with y and
// dx on a 64-byte boundary (64-byte line stores) and on 32 bytes only.
template <class T>
void check_paths_same_bits() {
  if (!core::isa_supported(core::Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  core::ThreadPool pool(2);
  struct Case {
    int64_t rows, dim;
    size_t out_off = 0;  // y and dx this many elements past a 64-byte boundary
  };
  std::vector<Case> cases;
  for (int64_t dim : {1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 40, 57, 97, 255, 256, 4096}) cases.push_back({37, dim});
  cases.push_back({1, 4096});
  cases.push_back({int64_t((size_t(9) << 20) / sizeof(T)) / 1024, 1024});  // streamed
  // streamed, y and dx on 32 bytes but not 64: the bf16 lines in two 32-byte stores
  cases.push_back({int64_t((size_t(9) << 20) / sizeof(T)) / 1024, 1024, 32 / sizeof(T)});
  // 9 MiB of fp32 x with y one element past a boundary (normal stores): over 4 MiB of x a thread,
  // so fp32 rows run their two passes apart (rmsnorm.cc kApartBytesPerThread)
  cases.push_back({int64_t((size_t(9) << 20) / sizeof(float)) / 1024, 1024, 1});
  uint32_t seed = 300;
  for (const Case& c : cases) {
    for (bool weighted : {false, true}) {
      const int64_t n = c.rows * c.dim;
      auto xs = random_vec<T>(n, seed++, 2), dys = random_vec<T>(n, seed++, 0);
      auto w = random_vec<float>(c.dim, seed++, 1);
      for (int64_t j = 0; j < c.dim; j += 5) w[size_t(j)] *= 1e-40f;  // denormal outputs
      auto x = core::aligned_array<T>(size_t(n)), dy = core::aligned_array<T>(size_t(n));
      std::copy(xs.begin(), xs.end(), x.get());
      std::copy(dys.begin(), dys.end(), dy.get());
      const float* wp = weighted ? w.data() : nullptr;
      std::vector<std::vector<T>> ys, dxs;
      std::vector<std::vector<float>> dws;
      // AVX2, AVX-512 as this CPU has it, and AVX-512 without AVX512_BF16 (the integer rounding
      // path of AVX-512 CPUs before Cooper Lake), when this CPU would take the vcvtneps2bf16 one.
      core::CpuFeatures no_bf16 = core::cpu_features();
      no_bf16.avx512_bf16 = false;
      const int variants = core::cpu_features().avx512_bf16 ? 3 : 2;
      for (int v = 0; v < variants; ++v) {
        ScopedRowIsa path(v == 0 ? core::Isa::kAvx2 : core::Isa::kAvx512);
        std::optional<core::ScopedCpuFeaturesForTest> features;
        if (v == 2) {
          features.emplace(no_bf16);
          ASSERT_FALSE(core::cpu_features().avx512_bf16);
        }
        auto ya = core::aligned_array<T>(size_t(n) + c.out_off), dxa = core::aligned_array<T>(size_t(n) + c.out_off);
        T* const y = ya.get() + c.out_off;
        T* const dx = dxa.get() + c.out_off;
        std::fill(y, y + n, nan_value<T>());
        std::fill(dx, dx + n, nan_value<T>());
        std::vector<float> dw(size_t(c.dim), NAN);
        rmsnorm_forward(x.get(), wp, y, c.rows, c.dim, kRmsNormEps, &pool);
        rmsnorm_backward(x.get(), wp, dy.get(), dx, weighted ? dw.data() : nullptr, c.rows,
                         c.dim, kRmsNormEps, &pool);
        ys.emplace_back(y, y + n);
        dxs.emplace_back(dx, dx + n);
        dws.push_back(dw);
      }
      const std::string tag = "[" + std::to_string(c.rows) + ", " + std::to_string(c.dim) + "] " +
                              (weighted ? "weighted" : "weight-free");
      for (size_t v = 1; v < ys.size(); ++v) {
        EXPECT_TRUE(same_bytes(ys[0], ys[v])) << tag << " y, path " << v;
        EXPECT_TRUE(same_bytes(dxs[0], dxs[v])) << tag << " dx, path " << v;
        if (weighted) {
          EXPECT_TRUE(same_bytes(dws[0], dws[v])) << tag << " dw, path " << v;
        }
      }
      bool denormal = false;
      for (const T& v : ys[1]) {
        const float f = val(v);
        denormal = denormal || (f != 0.f && std::fabs(f) < std::numeric_limits<float>::min());
      }
      if (weighted) {
        EXPECT_TRUE(denormal) << tag << ": no denormal output, the fallback untested";
      }
    }
  }
}

TEST(RmsNorm, PathsGiveSameBitsBf16) { check_paths_same_bits<bf16>(); }
TEST(RmsNorm, PathsGiveSameBitsF32) { check_paths_same_bits<float>(); }

// A zero row normalises to zero (r = eps^-1/2 is finite) and its gradient is r dy.
TEST(RmsNorm, ZeroRow) {
  core::ThreadPool pool(1);
  std::vector<float> x(9, 0.f), y(9, NAN), dy(9, 1.f), dx(9, NAN);
  rmsnorm_forward(x.data(), nullptr, y.data(), 1, 9, kRmsNormEps, &pool);
  rmsnorm_backward(x.data(), nullptr, dy.data(), dx.data(), nullptr, 1, 9, kRmsNormEps, &pool);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(y[size_t(i)], 0.f);
    EXPECT_NEAR(dx[size_t(i)], 1.0 / std::sqrt(double(kRmsNormEps)), 1.0);
  }
}

}  // namespace
}  // namespace trex::kernels
