// Fused AdamW: against the eager chain within stated bounds, every SIMD path bit-identical to the
// scalar one, bit-identical across thread counts and across any split of the range (what the
// swap optimizer relies on), candidate gating (poisoned bf16 output, gradient unchanged), and the
// known first step of Adam (|update| = lr when m = v = 0).
//
// Bounds, fused vs reference, per element (ulp(x) = spacing of fp32 at |x|): the two differ only
// in rounding m, v and theta's last op once (fma) or twice (mul, then add), so
//   m:     |dm| <= 2 ulp(sm),  sm = max(|b1 m0|, |c1 g|)        (m may cancel: ulps of the terms)
//   v:     |dv| <= 2 ulp(sv),  sv = max(b2 v0, c2 g^2)          (no cancellation: both >= 0)
//   theta: |dtheta| <= 2 ulp(st) + step (2 ulp(sm) / d + 16 eps32 |q|),
//          st = max(|theta0 decay|, |theta|), q = m / d           (the m and v differences
//          carried through q = m / d, plus theta's own rounding)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/adamw.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers
using core::bf16;

struct State {
  std::vector<float> theta, m, v, g;
};

// theta ~ N(0, 1), m ~ N(0, 0.01), v = (0.1 x)^2, g from distribution `dist`.
State make_state(int64_t n, uint32_t seed, int dist) {
  State s;
  s.theta = random_vec<float>(n, seed, 0);
  s.m = random_vec<float>(n, seed + 1, 0, 0.1f);
  s.v = random_vec<float>(n, seed + 2, 1, 0.1f);
  for (float& x : s.v) x *= x;
  s.g = random_vec<float>(n, seed + 3, dist, 0.1f);
  return s;
}

double ulp(double x) {
  float f = float(std::fabs(x));
  return double(std::nextafter(f, INFINITY)) - double(f);
}

const int64_t kSizes[] = {1, 7, 15, 16, 17, 33, 1000, 70001};

TEST(AdamW, FusedMatchesEagerChainWithinStatedBounds) {
  core::ThreadPool pool(2);
  const AdamWHyper hypers[] = {{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f},
                               {3e-2f, 0.8f, 0.95f, 1e-6f, 0.1f},
                               {1e-4f, 0.9f, 0.999f, 1e-8f, 0.f}};
  uint32_t seed = 1;
  for (const AdamWHyper& h : hypers) {
    for (int64_t step : {1, 2, 10, 1000}) {
      AdamWScalars sc = adamw_scalars(h, step);
      for (int64_t n : kSizes) {
        for (int dist = 0; dist < 4; ++dist, seed += 7) {
          State s0 = make_state(n, seed, dist);
          State f = s0, r = s0;
          std::vector<bf16> wf(size_t(n), nan_value<bf16>()), wr(size_t(n), nan_value<bf16>());
          adamw_update(sc, f.theta.data(), f.m.data(), f.v.data(), f.g.data(), wf.data(), n,
                       &pool);
          adamw_update_ref(sc, r.theta.data(), r.m.data(), r.v.data(), r.g.data(), wr.data(), n,
                           &pool);
          std::string tag = "n " + std::to_string(n) + " step " + std::to_string(step) +
                            " lr " + std::to_string(h.lr) + " dist " + std::to_string(dist) +
                            " seed " + std::to_string(seed);
          ASSERT_TRUE(same_bytes(f.g, s0.g)) << tag << ": gradient changed";
          int bad = 0;
          for (int64_t i = 0; i < n && bad < 3; ++i) {
            size_t k = size_t(i);
            double sm = std::max(std::fabs(double(sc.beta1) * s0.m[k]),
                                 std::fabs(double(sc.one_minus_beta1) * s0.g[k]));
            double sv = std::max(double(sc.beta2) * s0.v[k],
                                 double(sc.one_minus_beta2) * s0.g[k] * s0.g[k]);
            double d = std::sqrt(double(r.v[k])) / sc.bias2_sqrt + sc.eps;
            double q = double(r.m[k]) / d;
            double st = std::max(std::fabs(double(s0.theta[k]) * sc.decay),
                                 std::fabs(double(r.theta[k])));
            double tol_t = 2 * ulp(st) + sc.step_size * (2 * ulp(sm) / d +
                                                         16 * 1.2e-7 * std::fabs(q));
            bool ok = std::fabs(double(f.m[k]) - r.m[k]) <= 2 * ulp(sm) &&
                      std::fabs(double(f.v[k]) - r.v[k]) <= 2 * ulp(sv) &&
                      std::fabs(double(f.theta[k]) - r.theta[k]) <= tol_t;
            if (!ok) {
              ++bad;
              ADD_FAILURE() << tag << " [" << i << "]: fused theta " << f.theta[k] << " m "
                            << f.m[k] << " v " << f.v[k] << "; ref theta " << r.theta[k]
                            << " m " << r.m[k] << " v " << r.v[k];
            }
            // The bf16 copy is exactly the rounded fp32 weight, in both.
            if (wf[k].bits != core::to_bf16(f.theta[k]).bits ||
                wr[k].bits != core::to_bf16(r.theta[k]).bits) {
              ++bad;
              ADD_FAILURE() << tag << " [" << i << "]: bf16 copy is not bf16(theta)";
            }
          }
        }
      }
    }
  }
}

// Every supported SIMD path, on every size (tails included), gives the scalar path's bytes.
TEST(AdamW, AllIsaPathsBitIdentical) {
  AdamWScalars sc = adamw_scalars({2e-3f, 0.9f, 0.999f, 1e-8f, 0.05f}, 7);
  for (int64_t n : kSizes) {
    State s0 = make_state(n, 100 + uint32_t(n), 2);
    State want = s0;
    std::vector<bf16> ww(static_cast<size_t>(n));
    adamw_update_isa(core::Isa::kScalar, sc, want.theta.data(), want.m.data(), want.v.data(),
                     want.g.data(), ww.data(), n);
    for (core::Isa isa : {core::Isa::kAvx2, core::Isa::kAvx512}) {
      if (!core::isa_supported(isa)) {
        std::printf("  (%s not supported here: path not checked)\n", core::to_string(isa));
        continue;
      }
      State got = s0;
      std::vector<bf16> wg(size_t(n), nan_value<bf16>());
      adamw_update_isa(isa, sc, got.theta.data(), got.m.data(), got.v.data(), got.g.data(),
                       wg.data(), n);
      std::string tag = std::string(core::to_string(isa)) + " n " + std::to_string(n);
      EXPECT_TRUE(same_bytes(got.theta, want.theta)) << tag;
      EXPECT_TRUE(same_bytes(got.m, want.m)) << tag;
      EXPECT_TRUE(same_bytes(got.v, want.v)) << tag;
      EXPECT_TRUE(same_bytes(wg, ww)) << tag;
    }
  }
}

// theta_copy: on every path and size (vector tails included), the copy is the updated theta
// byte for byte, and everything else is what the update without a copy writes.
TEST(AdamW, ThetaCopyIsTheUpdatedThetaOnEveryPath) {
  core::ThreadPool pool(2);
  AdamWScalars sc = adamw_scalars({2e-3f, 0.9f, 0.999f, 1e-8f, 0.05f}, 4);
  for (int64_t n : kSizes) {
    State s0 = make_state(n, 300 + uint32_t(n), 1);
    for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
      if (!core::isa_supported(isa)) {
        std::printf("  (%s not supported here: path not checked)\n", core::to_string(isa));
        continue;
      }
      State want = s0, got = s0;
      std::vector<bf16> ww(static_cast<size_t>(n)), wg(size_t(n), nan_value<bf16>());
      std::vector<float> copy(size_t(n), nan_value<float>());
      adamw_update_isa(isa, sc, want.theta.data(), want.m.data(), want.v.data(), want.g.data(),
                       ww.data(), n, &pool);
      adamw_update_isa(isa, sc, got.theta.data(), got.m.data(), got.v.data(), got.g.data(),
                       wg.data(), n, &pool, copy.data());
      std::string tag = std::string(core::to_string(isa)) + " n " + std::to_string(n);
      EXPECT_TRUE(same_bytes(copy, want.theta)) << tag;
      EXPECT_TRUE(same_bytes(got.theta, want.theta) && same_bytes(got.m, want.m) &&
                  same_bytes(got.v, want.v) && same_bytes(wg, ww))
          << tag;
    }
  }
}

// The widened weights (trex train's model parameters) are core::to_float of the bf16 weights,
// bit for bit, on every path, from a 64-byte aligned array (streaming stores) and from one that
// is not, with and without the bf16 weights themselves; the rest is the update without them.
TEST(AdamW, WidenedWeightsAreTheBf16WeightsWidenedOnEveryPath) {
  core::ThreadPool pool(2);
  AdamWScalars sc = adamw_scalars({2e-3f, 0.9f, 0.999f, 1e-8f, 0.05f}, 4);
  for (int64_t n : kSizes) {
    State s0 = make_state(n, 500 + uint32_t(n), 1);
    for (core::Isa isa : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512}) {
      if (!core::isa_supported(isa)) {
        std::printf("  (%s not supported here: path not checked)\n", core::to_string(isa));
        continue;
      }
      State want = s0;
      std::vector<bf16> ww(static_cast<size_t>(n));
      adamw_update_isa(isa, sc, want.theta.data(), want.m.data(), want.v.data(), want.g.data(),
                       ww.data(), n, &pool);
      for (int shift : {0, 1}) {
        for (bool with_w : {true, false}) {
          State got = s0;
          std::vector<bf16> wg(size_t(n), nan_value<bf16>());
          std::vector<float> buf(size_t(n) + 32, nan_value<float>());
          float* wide = buf.data();
          while (reinterpret_cast<uintptr_t>(wide) % 64 != 0) ++wide;
          wide += shift;
          adamw_update_isa(isa, sc, got.theta.data(), got.m.data(), got.v.data(), got.g.data(),
                           with_w ? wg.data() : nullptr, n, &pool, nullptr, wide);
          const std::string tag = std::string(core::to_string(isa)) + " n " + std::to_string(n) +
                                  (shift ? " unaligned" : " aligned") +
                                  (with_w ? "" : " without bf16 weights");
          size_t bad = 0;
          for (int64_t i = 0; i < n; ++i) {
            const float f = core::to_float(ww[size_t(i)]);
            if (std::memcmp(&f, wide + i, sizeof f) != 0) ++bad;
          }
          EXPECT_EQ(bad, 0u) << tag << ": widened weights differ from the bf16 weights";
          EXPECT_TRUE(same_bytes(got.theta, want.theta) && same_bytes(got.m, want.m) &&
                      same_bytes(got.v, want.v))
              << tag;
          if (with_w) {
            EXPECT_TRUE(same_bytes(wg, ww)) << tag;
          }
          // Nothing written outside [wide, wide + n).
          bool outside_untouched = true;
          for (float* p = buf.data(); p < buf.data() + buf.size(); ++p)
            if ((p < wide || p >= wide + n) && !std::isnan(*p)) outside_untouched = false;
          EXPECT_TRUE(outside_untouched) << tag;
        }
      }
    }
  }
}

// 1, 2 and 3 threads, run twice each, and the range updated in odd-sized pieces: same bytes.
TEST(AdamW, BitReproducibleAcrossThreadsRunsAndSplits) {
  const int64_t n = 200003;  // several pool tasks plus a tail
  AdamWScalars sc = adamw_scalars({1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f}, 3);
  State s0 = make_state(n, 77, 0);
  State want = s0;
  std::vector<bf16> ww(static_cast<size_t>(n));
  {
    core::ThreadPool one(1);
    adamw_update(sc, want.theta.data(), want.m.data(), want.v.data(), want.g.data(), ww.data(), n,
                 &one);
  }
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    for (int run = 0; run < 2; ++run) {
      State got = s0;
      std::vector<bf16> wg(static_cast<size_t>(n));
      adamw_update(sc, got.theta.data(), got.m.data(), got.v.data(), got.g.data(), wg.data(), n,
                   &pool);
      EXPECT_TRUE(same_bytes(got.theta, want.theta) && same_bytes(got.m, want.m) &&
                  same_bytes(got.v, want.v) && same_bytes(wg, ww))
          << threads << " threads, run " << run;
    }
  }
  for (int64_t piece : {1, 5, 13, 1000, 4097, 65537}) {
    State got = s0;
    std::vector<bf16> wg(static_cast<size_t>(n));
    for (int64_t lo = 0; lo < n; lo += piece) {
      int64_t len = std::min(piece, n - lo);
      adamw_update(sc, got.theta.data() + lo, got.m.data() + lo, got.v.data() + lo,
                   got.g.data() + lo, wg.data() + lo, len);
    }
    EXPECT_TRUE(same_bytes(got.theta, want.theta) && same_bytes(got.m, want.m) &&
                same_bytes(got.v, want.v) && same_bytes(wg, ww))
        << "pieces of " << piece;
  }
}

// From m = v = 0 the bias corrections make the first step lr * g / (|g| + eps'), i.e. lr
// against the sign of g for |g| >> eps, on top of the decoupled decay.
TEST(AdamW, FirstStepHasMagnitudeLr) {
  AdamWHyper h{0.01f, 0.9f, 0.999f, 1e-8f, 0.1f};
  const int64_t n = 37;
  std::vector<float> theta = random_vec<float>(n, 5, 0), m(size_t(n), 0.f), v(size_t(n), 0.f);
  std::vector<float> g = random_vec<float>(n, 6, 1);
  std::vector<float> theta0 = theta;
  adamw_update(adamw_scalars(h, 1), theta.data(), m.data(), v.data(), g.data(), nullptr, n);
  for (size_t i = 0; i < size_t(n); ++i) {
    double expect = theta0[i] * (1.0 - 0.01 * 0.1) - 0.01 * (g[i] > 0 ? 1 : -1);
    EXPECT_NEAR(theta[i], expect, 1e-6) << i << " g " << g[i];
    EXPECT_FLOAT_EQ(m[i], 0.1f * g[i]);
  }
}

TEST(AdamW, NoBf16CopyWhenNotAskedAndEmptyRange) {
  AdamWScalars sc = adamw_scalars({}, 1);
  State s = make_state(5, 9, 0);
  adamw_update(sc, s.theta.data(), s.m.data(), s.v.data(), s.g.data(), nullptr, 0);
  adamw_update_ref(sc, s.theta.data(), s.m.data(), s.v.data(), s.g.data(), nullptr, 0);
  State ref = make_state(5, 9, 0);
  EXPECT_TRUE(same_bytes(s.theta, ref.theta));
  adamw_update(sc, s.theta.data(), s.m.data(), s.v.data(), s.g.data(), nullptr, 5);
  EXPECT_FALSE(same_bytes(s.theta, ref.theta));
}

}  // namespace
}  // namespace trex::kernels
