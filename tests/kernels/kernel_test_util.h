// Shared helpers of the kernel tests: dtype-generic values, seeded inputs from several
// distributions, tolerance checks that name the first bad elements, byte comparison for gating.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"

namespace trex::kernels::test_util {

using core::bf16;

// The row kernels' vector paths this CPU can run (row_isa.h): each test of such a kernel runs
// under every one of them (ScopedRowIsa), so the AVX2 body stays tested on AVX-512 machines.
inline std::vector<core::Isa> row_isas() {
  std::vector<core::Isa> out;
  for (core::Isa isa : {core::Isa::kAvx2, core::Isa::kAvx512})
    if (core::isa_supported(isa)) out.push_back(isa);
  if (out.empty()) out.push_back(core::Isa::kScalar);
  return out;
}

inline float val(float v) { return v; }
inline float val(bf16 v) { return core::to_float(v); }
template <class T>
T from(float v) {
  if constexpr (std::is_same_v<T, float>) return v; else return core::to_bf16(v);
}
template <class T>
T nan_value() {
  return from<T>(std::numeric_limits<float>::quiet_NaN());
}

// Inputs from several distributions so shortcuts fail: 0 normal, 1 uniform(-3, 3),
// 2 heavy-tailed (normal / sqrt(uniform)), 3 normal with every 5th value zero.
template <class T>
std::vector<T> random_vec(int64_t n, uint32_t seed, int dist, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float x = nd(rng);
    if (dist == 1) x = 6.f * ud(rng) - 3.f;
    if (dist == 2) x = x / std::sqrt(std::max(ud(rng), 1e-3f));
    if (dist == 3 && i % 5 == 0) x = 0.f;
    v[size_t(i)] = from<T>(x * scale);
  }
  return v;
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<T>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double a = val(got[i]), b = val(want[i]);
    if (a == b) continue;  // equal infinities (masked scores) have no finite difference
    if (!(std::fabs(a - b) <= tol + tol * std::fabs(b))) {
      if (bad++ < 3) ADD_FAILURE() << what << " [" << i << "]: fused " << a << " ref " << b;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace trex::kernels::test_util
