// The LM head's backward as the step runs it: dX = dL W (NN) on one thread, dW += dL^T yn (TN)
// on the other, side by side; prints wall and each task's own CPU time (medians of 5 calls).
#include <ctime>
#include <cstdio>
#include <vector>
#include <random>
#include <algorithm>
#include <chrono>
#include "trex/kernels/gemm.h"
#include "trex/core/thread_pool.h"
using namespace trex::kernels;
static double tcpu(){timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
int main() {
  const int64_t T = 2048, V = 8192, d = 512;
  std::vector<float> L(T*V), W(V*d), yn(T*d), dx(T*d), gW(V*d, 0.f);
  std::mt19937 r(1); std::uniform_real_distribution<float> u(-1,1);
  for (auto& x : L) x = u(r); for (auto& x : W) x = u(r); for (auto& x : yn) x = u(r);
  trex::core::ThreadPool pool(2);
  std::vector<double> wall, c0, c1;
  for (int s = 0; s < 6; ++s) {
    double t[2];
    auto w0 = std::chrono::steady_clock::now();
    pool.run([&](int th) {
      double a = tcpu();
      if (th == 0) sgemm(Trans::kNo, Trans::kNo, T, d, V, 1.f, L.data(), V, W.data(), d, 0.f, dx.data(), d, GemmOptions{&pool, nullptr});
      else sgemm(Trans::kYes, Trans::kNo, V, d, T, 1.f, L.data(), V, yn.data(), d, 1.f, gW.data(), d, GemmOptions{&pool, nullptr});
      t[th] = tcpu() - a;
    });
    double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    if (s == 0) continue;
    wall.push_back(w); c0.push_back(t[0]); c1.push_back(t[1]);
  }
  for (auto* v : {&wall, &c0, &c1}) std::sort(v->begin(), v->end());
  printf("wall %.2f ms  NN cpu %.2f ms  TN cpu %.2f ms\n", wall[2]*1e3, c0[2]*1e3, c1[2]*1e3);
}
