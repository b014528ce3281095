#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "trex/kernels/gemm_internal.h"
#include "trex/core/tensor.h"
static double cpu_now(){timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char** argv) {
  int64_t M = atol(argv[1]), K = atol(argv[2]), mc = atol(argv[3]), kc = atol(argv[4]);
  // op(A) = A^T: A is [K x M] row-major, lda = M
  std::vector<float> a(size_t(M*K), 1.f);
  std::vector<float> dst(size_t((mc+12)*kc));
  std::vector<double> t;
  for (int s = 0; s < 5; ++s) {
    double t0 = cpu_now();
    for (int64_t p0 = 0; p0 < K; p0 += kc)
      for (int64_t i0 = 0; i0 < M; i0 += mc)
        trex::kernels::gemm_detail::pack_a<float>(true, a.data(), M, i0, std::min(mc, M-i0), p0, std::min(kc, K-p0), 12, dst.data());
    t.push_back(cpu_now()-t0);
  }
  std::sort(t.begin(), t.end());
  printf("pack A^T %ldx%ld mc %ld kc %ld: %.2f ms, %.1f GB/s\n", M, K, mc, kc, t[2]*1e3, M*K*4/t[2]/1e9);
}
