#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <algorithm>
#include <time.h>
#include "trex/kernels/attention_tiles.h"
namespace trex::kernels::attn_new {
void column_dots(int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT, int64_t ldk, float alpha, float* C, int64_t ldc);
void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk, const float* const* b, float* C, int64_t ldc, bool accumulate);
}
namespace O_ = trex::kernels::attn_detail;
namespace N_ = trex::kernels::attn_new;
static double cpus(){timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char** argv) {
  const int H = 8, hd = 128, W = 64, ld = 144, S = 2048 + 8;
  const bool pf = argc > 1 && atoi(argv[1]);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> ring(size_t(hd) * ld * 4 + 64), q(size_t(S) * H * hd), kv(size_t(S) * hd + 16), Sc(4 * H * 64), O(size_t(S) * H * hd), O2(O.size()), Sc2(Sc.size());
  for (auto& x : ring) x = u(rng);
  for (auto& x : q) x = u(rng);
  for (auto& x : kv) x = u(rng);
  float* base = (float*)(((uintptr_t)ring.data() + 63) & ~uintptr_t(63));
  // bits check
  for (int t = 64; t < 80; ++t) {
    const float* qr[8];
    for (int h = 0; h < H; ++h) qr[h] = q.data() + (size_t(t) * H + h) * hd;
    const float* kw = base + (t % W + 1);
    O_::column_dots(H, W, hd, qr, kw, ld, 0.1f, Sc.data(), 64);
    N_::column_dots(H, W, hd, qr, kw, ld, 0.1f, Sc2.data(), 64);
    if (memcmp(Sc.data(), Sc2.data(), 4 * H * 64)) printf("COLUMN BITS DIFFER\n");
    const float* krows[64];
    for (int j = 0; j < 64; ++j) krows[j] = kv.data() + size_t(t - 63 + j) * hd;
    O_::outer_tiles(H, hd, 64, Sc.data(), 64, 1, krows, O.data(), hd, false);
    N_::outer_tiles(H, hd, 64, Sc.data(), 64, 1, krows, O2.data(), hd, false);
    if (memcmp(O.data(), O2.data(), 4 * H * hd)) printf("OUTER BITS DIFFER\n");
  }
  std::vector<double> all[8];
  const char* names[] = {"old cols", "new cols", "old outer", "new outer", "old both", "new both", "old cols+new outer", "new cols+old outer"};
  for (int round = 0; round < 11; ++round)
    for (int mode = 0; mode < 8; ++mode) {
      const bool cols = mode < 2 || mode >= 4, outer = mode >= 2;
      const bool ncol = mode == 1 || mode == 5 || mode == 7, nout = mode == 3 || mode == 5 || mode == 6;
      double t0 = cpus();
      for (int g0 = 64; g0 < S - 8; g0 += 4) {
        if (cols)
          for (int t = g0; t < g0 + 4; ++t) {
            const float* qr[8];
            for (int h = 0; h < H; ++h) qr[h] = q.data() + (size_t(t) * H + h) * hd;
            if (pf) { const char* p = (const char*)(q.data() + size_t(t + 1) * H * hd); for (int l = 0; l < 64; ++l) __builtin_prefetch(p + 64 * l, 0, 2); }
            const float* kw = base + size_t((t / W) % 4) * hd * ld + (t % W + 1);
            (ncol ? N_::column_dots : O_::column_dots)(H, W, hd, qr, kw, ld, 0.1f, Sc.data() + (t - g0) * H * 64, 64);
          }
        if (outer)
          for (int t = g0; t < g0 + 4; ++t) {
            const float* krows[64];
            if (pf) { char* p = (char*)(O.data() + size_t(t + 4) * H * hd); for (int l = 0; l < 64; ++l) __builtin_prefetch(p + 64 * l, 1, 2); }
            for (int j = 0; j < 64; ++j) krows[j] = kv.data() + size_t(t - 63 + j) * hd;
            (nout ? N_::outer_tiles : O_::outer_tiles)(H, hd, 64, Sc.data() + (t - g0) * H * 64, 64, 1, krows, O.data() + size_t(t) * H * hd, hd, false);
          }
      }
      all[mode].push_back((cpus() - t0) / (S - 72) * 1e9);
    }
  for (int mode = 0; mode < 8; ++mode) {
    auto& ts = all[mode];
    std::sort(ts.begin(), ts.end());
    printf("%-22s %5.0f ns per token (min %.0f)\n", names[mode], ts[ts.size() / 2], ts[0]);
  }
}
