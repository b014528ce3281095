// Unified RoPE: fused vs the eager reference chain (forward and inverse), inverse(forward(x)) = x,
// the backward (rotation by -sign) against central differences of a double forward, the YaRN
// check value of the spec, candidate gating and bit-identical results across thread counts.
//
// Tolerances (|fused - ref| <= atol + rtol |ref|): fp32 1e-5 (both compute the same two products
// and one add per output; the fused kernel's FMA skips one rounding: ~1e-7); bf16 storage 1e-2
// (one bf16 ulp is 0.4% relative, either side of a tie).
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
#include "trex/core/bf16.h"
#include "trex/core/arena.h"
#include "trex/core/cpu_features_override.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/rope.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

using core::bf16;

struct RopeShape {
  int64_t tokens, heads, head_dim;
  int rope_dim;
};
// Odd head dims put the rotated tail at odd (unaligned) offsets; rope_dim 6 and 34 leave
// pairs for the scalar tail; rope_dim 0 is a pure copy.
const RopeShape kShapes[] = {{1, 1, 1, 0},  {3, 2, 7, 6},    {5, 3, 33, 32},
                             {2, 1, 4097, 64}, {4, 5, 40, 34}, {9, 2, 64, 64}};

std::vector<int64_t> positions(int64_t tokens, uint32_t seed, int64_t max_pos) {
  std::mt19937 rng(seed);
  std::vector<int64_t> p(static_cast<size_t>(tokens));
  for (auto& v : p) v = int64_t(rng() % uint32_t(max_pos));
  return p;
}

RopeTable table_for(int rope_dim, bool yarn, int64_t max_pos) {
  RopeFreqConfig c;
  c.rope_dim = rope_dim;
  c.base = yarn ? 160000 : 10000;
  c.yarn = yarn;
  return rope_table(rope_frequencies(c), max_pos);
}

TEST(Rope, YarnCheckValue) {
  RopeFreqConfig c;  // Pro / Flash: rd 64, base 160000, L_orig 65536, beta 32 / 1
  c.base = 160000;
  c.yarn = true;
  double lo = 0, hi = 0;
  yarn_bounds(c, &lo, &hi);
  EXPECT_EQ(lo, 15);
  EXPECT_EQ(hi, 25);
  auto w = rope_frequencies(c);
  ASSERT_EQ(w.size(), 32u);
  // Below lo: unchanged; above hi: divided by the factor.
  EXPECT_DOUBLE_EQ(w[3], std::pow(160000.0, -6.0 / 64));
  EXPECT_DOUBLE_EQ(w[30], std::pow(160000.0, -60.0 / 64) / 16);
  EXPECT_DOUBLE_EQ(w[20], std::pow(160000.0, -40.0 / 64) * (1 - 0.5 + 0.5 / 16));
}

template <class T>
void check_against_ref(bool yarn, double tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 21;
  const int64_t max_pos = 5000;
  for (const RopeShape& s : kShapes) {
    RopeTable table = table_for(s.rope_dim, yarn, max_pos);
    for (int dist = 0; dist < 4; ++dist, ++seed) {
      for (int sign : {1, -1}) {
        int64_t n = s.tokens * s.heads * s.head_dim;
        std::string tag = "[" + std::to_string(s.tokens) + ", " + std::to_string(s.heads) + ", " +
                          std::to_string(s.head_dim) + "] rd " + std::to_string(s.rope_dim) +
                          " sign " + std::to_string(sign) + " dist " + std::to_string(dist);
        auto x = random_vec<T>(n, seed, dist);
        auto pos = positions(s.tokens, seed, max_pos);
        auto x0 = x;
        auto pos0 = pos;
        std::vector<T> y(size_t(n), nan_value<T>()), yr(size_t(n), nan_value<T>());
        rope_apply(x.data(), y.data(), pos.data(), s.tokens, s.heads, s.head_dim, table, sign,
                   &pool);
        rope_apply_ref(x.data(), yr.data(), pos.data(), s.tokens, s.heads, s.head_dim, table,
                       sign, &pool);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_FALSE(std::isnan(val(y[i]))) << tag << " y[" << i << "] not written";
        EXPECT_TRUE(same_bytes(x, x0) && pos == pos0) << tag << ": an input changed";
        expect_close(y, yr, tol, tag);
      }
    }
  }
}

// Outputs of 8 MiB and more whose head rows and rotated dims start on 32-byte boundaries take
// the streaming-store path: the same bits as the plain path (the pass-through dims as bits, the
// rotation the same operations), so it is compared with the plain path of an unaligned
// destination byte for byte, and with the reference within the tolerance.
template <class T>
void check_streaming_path(double tol) {
  core::ThreadPool pool(2);
  const int64_t heads = 4, head_dim = 512, rd = 64, max_pos = 4096;
  const int64_t tokens = int64_t((size_t(9) << 20) / sizeof(T)) / (heads * head_dim);
  const int64_t n = tokens * heads * head_dim;
  RopeTable table = table_for(int(rd), true, max_pos);
  auto xs = random_vec<T>(n, 61, 0);
  auto pos = positions(tokens, 62, max_pos);
  auto x = core::aligned_array<T>(size_t(n)), y = core::aligned_array<T>(size_t(n));
  std::copy(xs.begin(), xs.end(), x.get());
  std::fill(y.get(), y.get() + n, nan_value<T>());
  rope_apply(x.get(), y.get(), pos.data(), tokens, heads, head_dim, table, 1, &pool);
  std::vector<T> yr(static_cast<size_t>(n)), yu(static_cast<size_t>(n) + 1, nan_value<T>());
  rope_apply_ref(xs.data(), yr.data(), pos.data(), tokens, heads, head_dim, table, 1, &pool);
  // One element past a 32-byte boundary: not streamed.
  rope_apply(xs.data(), yu.data() + 1, pos.data(), tokens, heads, head_dim, table, 1, &pool);
  std::vector<T> ys(y.get(), y.get() + n);
  EXPECT_TRUE(same_bytes(ys, std::vector<T>(yu.begin() + 1, yu.end()))) << "streamed != plain";
  expect_close(ys, yr, tol, "streamed y");
}

TEST(Rope, StreamingStorePathF32) { check_streaming_path<float>(1e-5); }
TEST(Rope, StreamingStorePathBf16) { check_streaming_path<bf16>(1e-2); }

TEST(Rope, F32MatchesReference) { check_against_ref<float>(false, 1e-5); }
TEST(Rope, F32YarnMatchesReference) { check_against_ref<float>(true, 1e-5); }
TEST(Rope, Bf16MatchesReference) { check_against_ref<bf16>(false, 1e-2); }
TEST(Rope, Bf16YarnMatchesReference) { check_against_ref<bf16>(true, 1e-2); }

// The inverse undoes the forward (rotations are orthogonal): fp32 error ~2 roundings.
TEST(Rope, InverseUndoesForward) {
  core::ThreadPool pool(2);
  RopeTable table = table_for(64, true, 70000);
  const int64_t tokens = 6, heads = 3, hd = 97;
  auto x = random_vec<float>(tokens * heads * hd, 3, 0);
  std::vector<int64_t> pos = {0, 1, 17, 4095, 65535, 69999};
  std::vector<float> y(x.size()), z(x.size());
  rope_apply(x.data(), y.data(), pos.data(), tokens, heads, hd, table, 1, &pool);
  rope_apply(y.data(), z.data(), pos.data(), tokens, heads, hd, table, -1, &pool);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(z[i], x[i], 1e-5 * (1 + std::fabs(x[i])));
}

// loss = sum(dy * rope(x; sign)) in double, from the unrounded angles.
double loss(const std::vector<double>& x, const std::vector<double>& dy,
            const std::vector<double>& freq, const std::vector<int64_t>& pos, int64_t heads,
            int64_t hd, int sign) {
  int64_t rd = int64_t(freq.size()) * 2, o = hd - rd;
  double l = 0;
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t h = 0; h < heads; ++h) {
      size_t b = (t * size_t(heads) + size_t(h)) * size_t(hd);
      for (int64_t j = 0; j < o; ++j) l += dy[b + size_t(j)] * x[b + size_t(j)];
      for (int64_t p = 0; p < rd / 2; ++p) {
        double th = sign * double(pos[t]) * freq[size_t(p)];
        size_t i = b + size_t(o + 2 * p);
        double v0 = x[i], v1 = x[i + 1];
        l += dy[i] * (v0 * std::cos(th) - v1 * std::sin(th));
        l += dy[i + 1] * (v0 * std::sin(th) + v1 * std::cos(th));
      }
    }
  return l;
}

// The loss is linear in x, so central differences are exact up to rounding (~1e-16 / h with
// h = 1e-3): the fp32 backward (tables rounded to fp32, ~1e-7) must match within 1e-5.
TEST(Rope, BackwardIsInverseRotationFiniteDifferences) {
  core::ThreadPool pool(2);
  RopeFreqConfig c;
  c.rope_dim = 8;
  c.base = 160000;
  c.yarn = true;
  auto freq = rope_frequencies(c);
  RopeTable table = rope_table(freq, 100);
  const int64_t tokens = 3, heads = 2, hd = 11;
  std::vector<int64_t> pos = {0, 5, 99};
  for (int sign : {1, -1}) {
    auto x = random_vec<float>(tokens * heads * hd, 9, 0);
    auto dy = random_vec<float>(x.size(), 10, 0);
    std::vector<float> dx(x.size(), NAN);
    // Backward of a rotation by sign is the rotation by -sign.
    rope_apply(dy.data(), dx.data(), pos.data(), tokens, heads, hd, table, -sign, &pool);
    std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
    for (size_t i = 0; i < x.size(); ++i) {
      const double h = 1e-3, keep = xd[i];
      xd[i] = keep + h;
      double lp = loss(xd, dyd, freq, pos, heads, hd, sign);
      xd[i] = keep - h;
      double lm = loss(xd, dyd, freq, pos, heads, hd, sign);
      xd[i] = keep;
      EXPECT_NEAR(dx[i], (lp - lm) / (2 * h), 1e-5) << "sign " << sign << " dx[" << i << "]";
    }
  }
}

template <class T>
void check_thread_determinism() {
  RopeTable table = table_for(64, true, 1000);
  const int64_t tokens = 301, heads = 4, hd = 97;
  auto x = random_vec<T>(tokens * heads * hd, 5, 2);
  auto pos = positions(tokens, 6, 1000);
  std::vector<T> y1;
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    std::vector<T> y(x.size());
    rope_apply(x.data(), y.data(), pos.data(), tokens, heads, hd, table, 1, &pool);
    if (threads == 1) {
      y1 = y;
      continue;
    }
    EXPECT_TRUE(same_bytes(y, y1)) << threads << " threads";
  }
}

// The AVX-512 rows (16 lanes; bf16 a line per step by vcvtne2ps2bf16 where the CPU has
// AVX512_BF16) give the AVX2 rows' bits: every shape above (rotated tails of 6 and 34 dims, odd
// offsets), both signs, a streamed output (9 MiB, aligned) and denormal outputs (inputs scaled
// by 1e-39 in runs of 4 of every 14 elements, so a bf16 line with a denormal lane takes the
// integer rounding); also AVX-512 without AVX512_BF16 where this CPU has it.
template <class T>
void check_paths_same_bits() {
  if (!core::isa_supported(core::Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  core::ThreadPool pool(2);
  std::vector<RopeShape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({int64_t((size_t(9) << 20) / sizeof(T)) / (4 * 512), 4, 512, 64});  // streamed
  shapes.push_back({3, 2, 128, 96});  // a line, a 16-step and an 8-step of the rotated dims
  uint32_t seed = 71;
  for (const RopeShape& sh : shapes) {
    const int64_t n = sh.tokens * sh.heads * sh.head_dim;
    RopeTable table = table_for(sh.rope_dim, true, 4096);
    auto xs = random_vec<T>(n, seed++, 2);
    for (int64_t i = 0; i < n; ++i)  // runs of 4: a whole pair, whatever the rotated dims' offset
      if (i % 14 < 4) xs[size_t(i)] = from<T>(val(xs[size_t(i)]) * 1e-39f);
    auto pos = positions(sh.tokens, seed++, 4096);
    auto x = core::aligned_array<T>(size_t(n));
    std::copy(xs.begin(), xs.end(), x.get());
    core::CpuFeatures no_bf16 = core::cpu_features();
    no_bf16.avx512_bf16 = false;
    const int variants = core::cpu_features().avx512_bf16 ? 3 : 2;
    for (int sign : {1, -1}) {
      std::vector<std::vector<T>> ys;
      for (int v = 0; v < variants; ++v) {
        ScopedRowIsa path(v == 0 ? core::Isa::kAvx2 : core::Isa::kAvx512);
        std::optional<core::ScopedCpuFeaturesForTest> features;
        if (v == 2) features.emplace(no_bf16);
        auto y = core::aligned_array<T>(size_t(n));
        std::fill(y.get(), y.get() + n, nan_value<T>());
        rope_apply(x.get(), y.get(), pos.data(), sh.tokens, sh.heads, sh.head_dim, table, sign, &pool);
        ys.emplace_back(y.get(), y.get() + n);
      }
      const std::string tag = "[" + std::to_string(sh.tokens) + ", " + std::to_string(sh.heads) +
                              ", " + std::to_string(sh.head_dim) + "] rd " +
                              std::to_string(sh.rope_dim) + " sign " + std::to_string(sign);
      for (size_t v = 1; v < ys.size(); ++v)
        EXPECT_TRUE(same_bytes(ys[0], ys[v])) << tag << ", path " << v;
      bool denormal = false;
      for (const T& e : ys[0]) {
        const float f = val(e);
        denormal = denormal || (f != 0.f && std::fabs(f) < std::numeric_limits<float>::min());
      }
      if (sh.rope_dim >= 32) {
        EXPECT_TRUE(denormal) << tag << ": no denormal output, the fallback untested";
      }
    }
  }
}

// fp32 rows take the 8-lane rotate_row on every ISA today, so the F32 case compares a function
// with itself: it guards the promise for when an fp32 AVX-512 path comes back.
TEST(Rope, PathsGiveSameBitsF32) { check_paths_same_bits<float>(); }
TEST(Rope, PathsGiveSameBitsBf16) { check_paths_same_bits<bf16>(); }

TEST(Rope, BitIdenticalAcrossThreadCountsF32) { check_thread_determinism<float>(); }
TEST(Rope, BitIdenticalAcrossThreadCountsBf16) { check_thread_determinism<bf16>(); }

}  // namespace
}  // namespace trex::kernels
