// Mixed-precision sgemm (bf16 A and/or B, fp32 C): bit for bit the fp32 sgemm on widened copies
// of the operands, for every transpose, odd shapes, padded leading dimensions and beta; also the
// grouped GEMM with bf16 expert weights. Widening is exact, so equality is the right check.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/kernels/gemm.h"

namespace trex::kernels {
namespace {

std::vector<core::bf16> random_bf16(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<core::bf16> v(n);
  for (auto& x : v) x = core::to_bf16(d(rng));
  return v;
}

std::vector<float> widen(const std::vector<core::bf16>& v) {
  std::vector<float> out(v.size());
  core::bf16_to_fp32(v.data(), out.data(), v.size());
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Case {
  int64_t m, n, k;
};

TEST(GemmBf16, EveryOperandMixMatchesFp32OnWidenedCopies) {
  std::mt19937 rng(7);
  for (Case s : {Case{1, 1, 1}, Case{7, 13, 5}, Case{37, 70, 129}, Case{130, 33, 300}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.f, 0.5f}) {
          const int64_t pad = 3;
          const int64_t lda = (ta ? s.m : s.k) + pad, ldb = (tb ? s.k : s.n) + pad;
          const int64_t ldc = s.n + pad;
          auto a16 = random_bf16(size_t((ta ? s.k : s.m) * lda), rng);
          auto b16 = random_bf16(size_t((tb ? s.n : s.k) * ldb), rng);
          auto a32 = widen(a16), b32 = widen(b16);
          std::vector<float> c0(size_t(s.m * ldc));
          std::normal_distribution<float> d(0.f, 1.f);
          for (auto& x : c0) x = d(rng);
          Trans TA = ta ? Trans::kYes : Trans::kNo, TB = tb ? Trans::kYes : Trans::kNo;
          std::vector<float> want = c0, got_a = c0, got_b = c0, got_ab = c0;
          sgemm(TA, TB, s.m, s.n, s.k, 1.25f, a32.data(), lda, b32.data(), ldb, beta,
                want.data(), ldc);
          sgemm(TA, TB, s.m, s.n, s.k, 1.25f, a16.data(), lda, b32.data(), ldb, beta,
                got_a.data(), ldc);
          sgemm(TA, TB, s.m, s.n, s.k, 1.25f, a32.data(), lda, b16.data(), ldb, beta,
                got_b.data(), ldc);
          sgemm(TA, TB, s.m, s.n, s.k, 1.25f, a16.data(), lda, b16.data(), ldb, beta,
                got_ab.data(), ldc);
          SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k << " ta " << ta
                                          << " tb " << tb << " beta " << beta);
          EXPECT_TRUE(same_bits(want, got_a));
          EXPECT_TRUE(same_bits(want, got_b));
          EXPECT_TRUE(same_bits(want, got_ab));
        }
      }
    }
  }
}

TEST(GemmBf16, GroupedWithBf16WeightsMatchesFp32) {
  std::mt19937 rng(11);
  const int64_t n = 24, k = 40;
  std::vector<int64_t> rows = {5, 0, 17, 1};
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> a(size_t(total * k));
  for (auto& x : a) x = d(rng);
  std::vector<std::vector<core::bf16>> w16;
  std::vector<std::vector<float>> w32;
  for (size_t g = 0; g < rows.size(); ++g) {
    w16.push_back(random_bf16(size_t(n * k), rng));
    w32.push_back(widen(w16.back()));
  }
  std::vector<const core::bf16*> b16;
  std::vector<const float*> b32;
  for (size_t g = 0; g < rows.size(); ++g) {
    b16.push_back(w16[g].data());
    b32.push_back(w32[g].data());
  }
  std::vector<float> want(size_t(total * n)), got(size_t(total * n));
  grouped_sgemm(Trans::kYes, n, k, rows, 1.f, a.data(), k, b32, k, 0.f, want.data(), n);
  grouped_sgemm(Trans::kYes, n, k, rows, 1.f, a.data(), k, b16, k, 0.f, got.data(), n);
  EXPECT_TRUE(same_bits(want, got));
}

}  // namespace
}  // namespace trex::kernels
