#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "trex/kernels/gemm_internal.h"
static double cpu() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
// main's code path for full NN panels: panel by panel
void old_pack(const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t nc, float* dst) {
  for (int64_t q = 0; q < nc / 32; ++q) {
    const float* s = b + p0 * ldb + q * 32; float* d = dst + q * kc * 32;
    for (int64_t p = 0; p < kc; ++p) {
      const float* sp = s + p * ldb;
#pragma GCC unroll 32
      for (int i = 0; i < 32; ++i) d[p * 32 + i] = sp[i];
    }
  }
}
int main(int argc, char** argv) {
  int64_t k = atol(argv[1]), n = atol(argv[2]), kc = std::min<int64_t>(512, k);
  std::vector<float> b(k * n); for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 1000);
  float* d1 = (float*)aligned_alloc(64, k * n * 4); float* d2 = (float*)aligned_alloc(64, k * n * 4);
  std::vector<double> t1, t2;
  for (int r = 0; r < 21; ++r) {
    for (int o = 0; o < 2; ++o) {
      bool first_old = (r + o) % 2 == 0;
      double c0 = cpu();
      if (first_old) for (int64_t pc = 0; pc < k; pc += kc) old_pack(b.data(), n, pc, kc, n, d1 + pc * n);
      else for (int64_t pc = 0; pc < k; pc += kc) trex::kernels::gemm_detail::pack_b<float>(false, b.data(), n, pc, kc, 0, n, 32, 0, n / 32, d2 + pc * n);
      (first_old ? t1 : t2).push_back(cpu() - c0);
    }
  }
  std::sort(t1.begin(), t1.end()); std::sort(t2.begin(), t2.end());
  printf("%ld x %ld: panel by panel %.3f ms [%.3f..%.3f], row by row %.3f ms [%.3f..%.3f], old/new %.2f, same bytes: %s\n", k, n, t1[10]*1e3, t1[0]*1e3, t1[20]*1e3, t2[10]*1e3, t2[0]*1e3, t2[20]*1e3, t1[10]/t2[10], memcmp(d1, d2, k * n * 4) == 0 ? "yes" : "NO");
}
