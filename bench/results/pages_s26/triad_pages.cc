// One-process A/B of the STREAM triad on huge against 4 KiB pages: two sets of 3 x 128 MiB arrays,
// one mapped with MADV_HUGEPAGE, one with MADV_NOHUGEPAGE, each thread first-touching its chunk;
// rounds alternate the order; each round times best-of-5 triads on each set (2 threads).
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
constexpr long kN = 1L << 24;
double* map(bool huge) {
  size_t len = kN * sizeof(double), over = len + (2 << 20);
  char* raw = (char*)mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* p = (char*)(((uintptr_t)raw + (2 << 20) - 1) & ~uintptr_t((2 << 20) - 1));
  madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return (double*)p;
}
template <class F> void par(F f) {
  std::thread t([&] { f(kN / 2, kN); });
  f(0, kN / 2);
  t.join();
}
int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  double* s[2][3];
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 3; ++k) s[h][k] = map(h == 1 || (argc > 2 && argv[2][0] == 'c'));
    par([&](long lo, long hi) { for (long i = lo; i < hi; ++i) s[h][0][i] = 1, s[h][1][i] = 2, s[h][2][i] = 0; });
  }
  std::vector<double> gb[2], ratio;
  for (int r = 0; r < rounds; ++r) {
    double best[2];
    for (int o = 0; o < 2; ++o) {
      int h = (r % 2) ? 1 - o : o;
      double* a = s[h][0]; double* b = s[h][1]; double* c = s[h][2];
      double bt = 1e9;
      for (int rep = 0; rep < 5; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        par([&](long lo, long hi) { for (long i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i]; });
        bt = std::min(bt, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      best[h] = 3.0 * kN * 8 / bt / 1e9;
      gb[h].push_back(best[h]);
    }
    ratio.push_back(best[1] / best[0]);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  auto mn = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto mx = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  printf("rounds %d: 4K %.1f GB/s (%.1f-%.1f), huge %.1f (%.1f-%.1f), huge/4K per round median %.3f (%.2f-%.2f)\n", rounds,
         med(gb[0]), mn(gb[0]), mx(gb[0]), med(gb[1]), mn(gb[1]), mx(gb[1]), med(ratio), mn(ratio), mx(ratio));
  // smaps check is external
}
