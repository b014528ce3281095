#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <algorithm>
#include <time.h>
namespace trex::kernels::attn_new {
void column_dots(int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT, int64_t ldk, float alpha, float* C, int64_t ldc);
void column_dots_part(int part, int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT, int64_t ldk, float alpha, float* C, int64_t ldc, float* P01, float* P2, int64_t ldp);
void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk, const float* const* b, float* C, int64_t ldc, bool accumulate);
}
namespace N_ = trex::kernels::attn_new;
static double cpus(){timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char** argv) {
  const int H = 8, hd = 128, W = 64, ld = 144, S = 2048 + 8;
  const int qmod = argc > 1 ? atoi(argv[1]) : 0;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> ring(size_t(hd) * ld * 4 + 64), q(size_t(S) * H * hd), kv(size_t(S) * hd + 16), Sc(4 * H * 64), O(size_t(S) * H * hd), P(4 * 2 * H * 64);
  for (auto& x : ring) x = u(rng);
  for (auto& x : q) x = u(rng);
  for (auto& x : kv) x = u(rng);
  float* base = (float*)(((uintptr_t)ring.data() + 63) & ~uintptr_t(63));
  std::vector<double> all[4];
  const char* names[] = {"cols per token", "cols parts x group", "outer", "cols parts hot (same token)"};
  for (int round = 0; round < 11; ++round)
    for (int mode = 0; mode < 4; ++mode) {
      double t0 = cpus();
      for (int g0 = 64; g0 < S - 8; g0 += 4) {
        const float* qr[4][8]; const float* kw[4];
        for (int i = 0; i < 4; ++i) {
          int t = mode == 3 ? 100 : g0 + i;
          for (int h = 0; h < H; ++h) qr[i][h] = q.data() + (size_t(qmod ? t % qmod : t) * H + h) * hd;
          kw[i] = base + size_t((t / W) % 4) * hd * ld + (t % W + 1);
        }
        if (mode == 0) for (int i = 0; i < 4; ++i) N_::column_dots(H, W, hd, qr[i], kw[i], ld, 0.1f, Sc.data() + i * H * 64, 64);
        if (mode == 1 || mode == 3) for (int p = 0; p < 4; ++p) for (int i = 0; i < 4; ++i) N_::column_dots_part(p, H, W, hd, qr[i], kw[i], ld, 0.1f, Sc.data() + i * H * 64, 64, P.data() + i * 2 * H * 64, P.data() + (i * 2 + 1) * H * 64, 64);
        if (mode == 2)
          for (int t = g0; t < g0 + 4; ++t) {
            const float* krows[64];
            for (int j = 0; j < 64; ++j) krows[j] = kv.data() + size_t(t - 63 + j) * hd;
            N_::outer_tiles(H, hd, 64, Sc.data() + (t - g0) * H * 64, 64, 1, krows, O.data() + size_t(t) * H * hd, hd, false);
          }
      }
      all[mode].push_back((cpus() - t0) / (S - 72) * 1e9);
    }
  for (int mode = 0; mode < 4; ++mode) {
    auto& ts = all[mode];
    std::sort(ts.begin(), ts.end());
    printf("%-30s %5.0f ns per token (min %.0f)\n", names[mode], ts[ts.size() / 2], ts[0]);
  }
}
