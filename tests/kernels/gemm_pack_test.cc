// The packed layouts of gemm_pack.cc element by element, against their definition in
// gemm_internal.h: panel q of B lands at dst + q * kc * NR and holds op(B)(p0 + p, j0 + q NR + j)
// at [p * NR + j], zero past the nc columns; only panels [panel_lo, panel_hi) are written. The
// GEMM tests see a wrong panel only through the product; this names the element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/kernels/gemm_internal.h"

namespace trex::kernels::gemm_detail {
namespace {

// op(B)(p, j) of a row-major source with leading dimension ld.
template <class S>
float op_b(const std::vector<S>& b, bool trans, int64_t ld, int64_t p, int64_t j) {
  const S v = trans ? b[size_t(j * ld + p)] : b[size_t(p * ld + j)];
  if constexpr (std::is_same_v<S, float>) return v;
  else return core::to_float(v);
}

template <class S>
void check_pack_b(bool trans, int64_t k, int64_t n, int64_t ld_pad, int64_t p0, int64_t kc,
                  int64_t j0, int64_t nc, int nr, int64_t panel_lo, int64_t panel_hi) {
  const int64_t ld = (trans ? k : n) + ld_pad;
  std::vector<S> b(size_t((trans ? n : k) * ld));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : b) {
    if constexpr (std::is_same_v<S, float>) v = u(rng);
    else v = core::to_bf16(u(rng));
  }
  const int64_t panels = (nc + nr - 1) / nr;
  const float kUnwritten = -7.0f;  // where pack_b must not write
  std::vector<float> dst(size_t(panels * kc * nr), kUnwritten);
  pack_b<S>(trans, b.data(), ld, p0, kc, j0, nc, nr, panel_lo, panel_hi, dst.data());
  const std::string what = std::string(trans ? "B^T" : "B") + " kc " + std::to_string(kc) +
                           " nc " + std::to_string(nc) + " nr " + std::to_string(nr) +
                           " panels " + std::to_string(panel_lo) + ".." + std::to_string(panel_hi);
  for (int64_t q = 0; q < panels; ++q)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = 0; j < nr; ++j) {
        const float got = dst[size_t(q * kc * nr + p * nr + j)];
        const int64_t col = q * nr + j;
        float want = kUnwritten;
        if (q >= panel_lo && q < panel_hi)
          want = col < nc ? op_b(b, trans, ld, p0 + p, j0 + col) : 0.0f;
        ASSERT_EQ(got, want) << what << ": panel " << q << " depth " << p << " lane " << j;
      }
}

TEST(GemmPack, PackedBHoldsEachElementOfItsPanel) {
  // Depths not a multiple of the 8-depth blocks of the row-wise copy (13, 300), an edge panel
  // (nc 100 = 3 x 32 + 4), a sub-range of panels, offsets into B and a padded leading dimension.
  for (bool trans : {false, true})
    for (int nr : {32, 16}) {
      check_pack_b<float>(trans, 400, 260, 3, 0, 300, 0, 100, nr, 0, (100 + nr - 1) / nr);
      check_pack_b<float>(trans, 400, 260, 0, 17, 13, 40, 200, nr, 1, 3);
      check_pack_b<float>(trans, 64, 512, 5, 0, 64, 0, 512, nr, 0, 512 / nr);
      check_pack_b<core::bf16>(trans, 400, 260, 3, 5, 300, 7, 100, nr, 0, (100 + nr - 1) / nr);
      check_pack_b<core::bf16>(trans, 64, 512, 0, 0, 64, 0, 512, nr, 2, 512 / nr);
    }
}

}  // namespace
}  // namespace trex::kernels::gemm_detail
