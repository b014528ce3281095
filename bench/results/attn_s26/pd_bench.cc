// dot_tiles vs pair_rows + pair_dots at the ratio-4 forward's per-token shape (8 heads, 64 keys
// of 512 scattered rows, hd 128), one thread, thread CPU time, alternating rounds; bits compared.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <time.h>
#include <vector>
#include "trex/core/aligned_vector.h"
#include "trex/kernels/attention_tiles.h"
using namespace trex::kernels::attn_detail;
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char** argv) {
  const int64_t H = 8, hd = 128, nk = 64, ncomp = 512, T = 256;
  int rounds = argc > 1 ? atoi(argv[1]) : 11;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  trex::core::aligned_vector<float> q(T * H * hd), kc(ncomp * hd), aT(8 * hd);
  for (auto& x : q) x = u(rng);
  for (auto& x : kc) x = u(rng);
  std::vector<std::vector<const float*>> keys(T), rows(T);
  for (int64_t t = 0; t < T; ++t) {
    for (int j = 0; j < nk; ++j) keys[t].push_back(kc.data() + (rng() % ncomp) * hd);
    for (int h = 0; h < H; ++h) rows[t].push_back(q.data() + (t * H + h) * hd);
  }
  std::vector<float> C1(T * H * nk), C2(T * H * nk);
  auto A = [&] { for (int64_t t = 0; t < T; ++t) dot_tiles(H, nk, hd, rows[t].data(), keys[t].data(), 0.088f, C1.data() + t * H * nk, nk); };
  auto B = [&] { for (int64_t t = 0; t < T; ++t) { pair_rows(rows[t].data(), hd, aT.data()); pair_dots(nk, hd, aT.data(), keys[t].data(), 0.088f, C2.data() + t * H * nk, nk); } };
  A(); B();
  std::printf("same bits %s\n", std::memcmp(C1.data(), C2.data(), C1.size() * 4) ? "NO" : "yes");
  std::vector<double> ta, tb, r;
  for (int i = 0; i < rounds; ++i) {
    double x[2];
    for (int p = 0; p < 2; ++p) {
      int c = p ^ (i & 1);
      double s = tcpu();
      for (int k = 0; k < 20; ++k) { if (c) B(); else A(); }
      x[c] = (tcpu() - s) / 20 / T * 1e9;
    }
    ta.push_back(x[0]); tb.push_back(x[1]); r.push_back(x[0] / x[1]);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  double fl = 2.0 * H * nk * hd;
  std::printf("ns/token: dot_tiles %.0f (%.1f GFLOP/s), pair %.0f (%.1f GFLOP/s); dot/pair median %.3f (min %.3f max %.3f)\n",
              med(ta), fl / med(ta), med(tb), fl / med(tb), med(r), *std::min_element(r.begin(), r.end()), *std::max_element(r.begin(), r.end()));
}
