#include <chrono>
#include <ctime>
static double cpu_now(){timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include "trex/kernels/gemm.h"
#include "trex/core/thread_pool.h"
using namespace trex::kernels;
int main(int argc, char** argv) {
  int64_t m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  bool ta = atoi(argv[4]), tb = atoi(argv[5]); float beta = atof(argv[6]);
  std::vector<float> a(m*k), b(k*n), c(m*n, 0.f);
  std::mt19937 r(1); std::uniform_real_distribution<float> u(-1,1);
  for (auto& x : a) x = u(r); for (auto& x : b) x = u(r);
  trex::core::ThreadPool pool(1);
  GemmOptions opt{&pool, nullptr};
  double flops = 2.0*m*n*k; int reps = std::max<int>(2, int(1e9/flops));
  std::vector<double> t;
  for (int s = 0; s < 5; ++s) {
    double t0 = cpu_now();
    for (int i = 0; i < reps; ++i)
      sgemm(ta?Trans::kYes:Trans::kNo, tb?Trans::kYes:Trans::kNo, m,n,k,1.f,a.data(), ta?m:k, b.data(), tb?k:n, beta, c.data(), n, opt);
    t.push_back((cpu_now()-t0)/reps);
  }
  std::sort(t.begin(), t.end());
  printf("%ldx%ldx%ld ta%d tb%d beta%g: %.1f GFLOP/s\n", m,n,k,ta,tb,beta, flops/t[2]/1e9);
}
