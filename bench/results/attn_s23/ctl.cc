// Control: a register-only FMA loop (16 independent zmm chains) on 1 thread vs 2 threads at once,
// alternating, per-thread CPU time per unit of work. Tells whether two of this VM's vCPUs slow
// each other (shared core / frequency) with no memory traffic at all.
#include <immintrin.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <time.h>
#include <vector>
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
__attribute__((noinline)) float work(long iters) {
  __m512 c[16];
  for (int i = 0; i < 16; ++i) c[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (long it = 0; it < iters; ++it) {
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) c[i] = _mm512_fmadd_ps(a, c[i], b);
    asm("" : "+v"(c[0]), "+v"(c[1]), "+v"(c[2]), "+v"(c[3]), "+v"(c[4]), "+v"(c[5]), "+v"(c[6]), "+v"(c[7]));
  }
  float s = 0; for (int i = 0; i < 16; ++i) s += _mm512_reduce_add_ps(c[i]);
  return s;
}
int main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000000; int rounds = argc > 2 ? atoi(argv[2]) : 9;
  std::vector<double> r1, r2; volatile float sink = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int p = 0; p < 2; ++p) {
      int n = ((p ^ r) & 1) ? 2 : 1;
      std::vector<double> t(n); std::vector<std::thread> th;
      for (int i = 0; i < n; ++i) th.emplace_back([&, i] { double a = tcpu(); sink = sink + work(iters); t[i] = tcpu() - a; });
      for (auto& x : th) x.join();
      double m = 0; for (double x : t) m += x / n;
      (n == 1 ? r1 : r2).push_back(m);
    }
  }
  std::sort(r1.begin(), r1.end()); std::sort(r2.begin(), r2.end());
  double fl = 2.0 * 16 * 16 * iters;
  std::printf("FMA loop per-thread CPU s: 1 thread median %.4f (%.1f GFLOP/s per CPU s), 2 threads %.4f (%.1f); 2/1 = %.3f\n",
              r1[r1.size() / 2], fl / r1[r1.size() / 2] / 1e9, r2[r2.size() / 2], fl / r2[r2.size() / 2] / 1e9, r2[r2.size() / 2] / r1[r1.size() / 2]);
}
