#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "trex/kernels/gemm_internal.h"
static double cpu_now(){timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char** argv) {
  int64_t kc = atol(argv[1]); int nb = atoi(argv[2]);  // nb B slivers walked per A sliver
  alignas(64) static float a[12*2048], b[32*2048*8], c[12*32*8];
  for (auto& x : a) x = 0.001f; for (auto& x : b) x = 0.001f;
  std::vector<double> t; int reps = int(4e8 / (2.0*12*32*kc*nb));
  for (int s = 0; s < 5; ++s) {
    double t0 = cpu_now();
    for (int r = 0; r < reps; ++r) for (int q = 0; q < nb; ++q)
      trex::kernels::gemm_detail::microkernel_avx512_12x32(kc, a, b + q*32*kc, c + (q%8)*12*32, 32, 1.f, 1.f);
    t.push_back(cpu_now() - t0);
  }
  std::sort(t.begin(), t.end());
  printf("kc %ld nb %d: %.1f GFLOP/s\n", kc, nb, 2.0*12*32*kc*nb*reps/t[2]/1e9);
}
