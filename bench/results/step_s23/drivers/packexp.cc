#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
static double cpu_now(){timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
template <int R>
__attribute__((noinline)) void panel_cols(const float* s, int64_t ld, int64_t kc, float* d) {
  for (int64_t p = 0; p < kc; ++p) { const float* sp = s + p * ld;
#pragma GCC unroll 32
    for (int i = 0; i < R; ++i) d[p * R + i] = sp[i]; }
}
template <int R, int G>
__attribute__((noinline)) void group_cols(const float* s, int64_t ld, int64_t kc, int64_t panels, float* d) {
  const int64_t pf = kc * R;
  int64_t q0 = 0;
  for (; q0 + G <= panels; q0 += G)
    for (int64_t p = 0; p < kc; ++p) { const float* sp = s + p * ld + q0 * R; float* dp = d + q0 * pf + p * R;
#pragma GCC unroll 8
      for (int q = 0; q < G; ++q)
#pragma GCC unroll 32
        for (int i = 0; i < R; ++i) dp[q * pf + i] = sp[q * R + i]; }
  for (; q0 < panels; ++q0) panel_cols<R>(s + q0 * R, ld, kc, d + q0 * pf);
}
int main(int argc, char** argv) {
  int64_t M = atol(argv[1]), K = atol(argv[2]), mc = atol(argv[3]), kc = atol(argv[4]); int G = atoi(argv[5]);
  std::vector<float> a(size_t(M*K), 1.f);
  std::vector<float> dst(size_t((mc+12)*kc));
  std::vector<double> t;
  for (int s = 0; s < 5; ++s) {
    double t0 = cpu_now();
    for (int64_t p0 = 0; p0 < K; p0 += kc)
      for (int64_t i0 = 0; i0 < M; i0 += mc) {
        const float* src = a.data() + p0 * M + i0; int64_t panels = std::min(mc, M - i0) / 12, k = std::min(kc, K - p0);
        switch (G) {
          case 1: for (int64_t q = 0; q < panels; ++q) panel_cols<12>(src + q*12, M, k, dst.data() + q*k*12); break;
          case 2: group_cols<12,2>(src, M, k, panels, dst.data()); break;
          case 4: group_cols<12,4>(src, M, k, panels, dst.data()); break;
          case 5: group_cols<12,5>(src, M, k, panels, dst.data()); break;
          case 10: group_cols<12,10>(src, M, k, panels, dst.data()); break;
        }
      }
    t.push_back(cpu_now()-t0);
  }
  std::sort(t.begin(), t.end());
  printf("G %d: %.2f ms\n", G, t[2]*1e3);
}
