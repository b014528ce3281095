// nb8_ab: packed_matvec.h's panels_range (rows in blocks of 6 x 4 panels: 8 rows = 6 + 2, the
// 4-panel block's weights read a second time, from L2) against 8 rows in one block of 3 panels
// (24 sums + 3 weights + 1 broadcast = 28 zmm), one process, alternating, CPU time, bits compared.
// Matrices: the LM head [4096, 256] and 40 x ([384, 256] + [256, 192]) expert-like (~36 MB in all).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "trex/model/packed_matvec.h"
#include "trex/util/cpu_time.h"

using namespace trex::model;
using namespace trex::model::packed_detail;

void rows8_range(const PackedMatrix& w, const float* x, int64_t n, float* y, int64_t q0, int64_t q1) {
  const int64_t out = w.out();
  for (int64_t p = q0; p < q1; p += 3) {
    const int64_t np = std::min<int64_t>(3, q1 - p);
    switch (np) {
      case 1: block<1, 8>(w, p, x, y, out); break;
      case 2: block<2, 8>(w, p, x, y, out); break;
      default: block<3, 8>(w, p, x, y, out); break;
    }
  }
  (void)n;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 15;
  const bool head_only = argc > 2 && std::string(argv[2]) == "head";
  const int n = 8;
  std::mt19937 rng(1); std::normal_distribution<float> nd;
  std::vector<PackedMatrix> ms;
  auto add = [&](int64_t o, int64_t i) { std::vector<float> w(size_t(o * i)); for (float& v : w) v = nd(rng); ms.emplace_back(w.data(), o, i); };
  add(4096, 256);
  if (!head_only) for (int k = 0; k < 40; ++k) { add(384, 256); add(256, 192); }
  std::vector<float> x(size_t(n * 4096)); for (float& v : x) v = nd(rng);
  std::vector<float> ya(size_t(n * 4096)), yb(ya.size());
  size_t differ = 0;
  for (auto& m : ms) {
    panels_range(m, x.data(), n, ya.data(), 0, m.panels());
    rows8_range(m, x.data(), n, yb.data(), 0, m.panels());
    differ += std::memcmp(ya.data(), yb.data(), size_t(n * m.out()) * 4) != 0;
  }
  std::vector<double> ra;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int v = 0; v < 2; ++v) {
      const int which = (r % 2) ? 1 - v : v;
      const double c0 = trex::process_cpu_seconds();
      for (int rep = 0; rep < 20; ++rep)
        for (auto& m : ms) {
          if (which == 0) panels_range(m, x.data(), n, ya.data(), 0, m.panels());
          else rows8_range(m, x.data(), n, yb.data(), 0, m.panels());
        }
      t[which] = trex::process_cpu_seconds() - c0;
    }
    ra.push_back(t[0] / t[1]);
    std::printf("round %d: 6+2 %.3f ms, 8x3 %.3f ms per pass (%.3fx)\n", r, 1e3 * t[0] / 20, 1e3 * t[1] / 20, t[0] / t[1]);
  }
  std::sort(ra.begin(), ra.end());
  std::printf("8 rows%s: median (6+2)/(8x3) %.3f (range %.3f-%.3f); matrices whose bits differ: %zu of %zu\n", head_only ? " head only" : "", ra[ra.size() / 2], ra.front(), ra.back(), differ, ms.size());
}
