// window_scores_bench.cc (session 26, attn round 2): column_dots alone, 8 rows x 64 window
// columns x hd 128 from a [128][144] block, 2048 tokens a round, 15 rounds, median CPU time.
// MODE 0: one token's q rows and column offset OFFSET every time (q in L1); 1: q streaming,
// offsets cycling; 2: q fixed, offsets cycling; 3: q streaming, no requests; 4: q requested
// into L1 8 tokens ahead; 5, 6: into L1 1, 2 ahead; 7, 8: into L2 (prefetcht1) 8, 4 ahead;
// 9: into L2 8 ahead and L1 1 ahead (modes 3-9 at a fixed offset).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <time.h>
#include <algorithm>
#include "trex/kernels/attention_tiles.h"
static double cpu() { timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char** argv) {
  int mode = atoi(argv[1]); int fixed_off = argc > 2 ? atoi(argv[2]) : 1;
  const int64_t hd = 128, ld = 144, T = 2048, H = 8;
  std::vector<float> blk(hd * ld + 64), q(T * H * hd), S(H * 80);
  for (size_t i = 0; i < blk.size(); ++i) blk[i] = float(i % 13) * 0.1f;
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(i % 7) * 0.1f;
  float* b = (float*)(((uintptr_t)blk.data() + 63) & ~uintptr_t(63));
  std::vector<double> ts;
  for (int round = 0; round < 15; ++round) {
    double a = cpu();
    for (int64_t t = 0; t < T; ++t) {
      const float* rows[8];
      const int64_t tq = (mode == 0 || mode == 2) ? 0 : t;
      if (mode >= 5) {
        const int64_t d = mode == 5 ? 1 : mode == 6 ? 2 : mode == 7 ? 8 : mode == 8 ? 4 : 8;
        const int hint = mode >= 7 ? 1 : 0;
        if (t + d < T) for (int l = 0; l < 64; ++l) { const char* p = (const char*)(q.data() + (t + d) * H * hd) + 64 * l; if (hint) __builtin_prefetch(p, 0, 2); else __builtin_prefetch(p, 0, 3); }
        if (mode == 9 && t + 1 < T) for (int l = 0; l < 64; ++l) __builtin_prefetch((const char*)(q.data() + (t + 1) * H * hd) + 64 * l, 0, 3);
      }
      if (mode == 4 && t + 8 < T) for (int l = 0; l < 64; ++l) __builtin_prefetch((const char*)(q.data() + (t + 8) * H * hd) + 64 * l, 0, 3);
      for (int h = 0; h < 8; ++h) rows[h] = q.data() + (tq * H + h) * hd;
      const int64_t off = (mode == 0 || mode >= 3) ? fixed_off : 1 + (t % 64);
      trex::kernels::attn_detail::column_dots(8, 64, hd, rows, b + off, ld, 0.1f, S.data(), 80);
    }
    ts.push_back((cpu() - a) / T);
  }
  std::sort(ts.begin(), ts.end());
  double f = 2.0 * 8 * 64 * 128;
  printf("mode %d off %d: %.3f us/token, %.1f GFLOP/s (min %.1f max %.1f)\n", mode, fixed_off, ts[7] * 1e6, f / ts[7] / 1e9, f / ts[14] / 1e9, f / ts[0] / 1e9);
}
