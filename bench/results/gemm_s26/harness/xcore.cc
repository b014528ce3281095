// Cross-core read: CPU w writes a buffer, CPU r reads it; against CPU w reading its own.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <immintrin.h>
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
__attribute__((target("avx512f"))) static float readall(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i)); a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32)); a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
int main(int argc, char** argv) {
  size_t bytes = size_t(atof(argv[1]) * 1048576); size_t n = bytes / 4;
  float* buf = (float*)aligned_alloc(64, bytes);
  for (size_t i = 0; i < n; ++i) buf[i] = 1;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double own = 0, other = 0;
    // writer on CPU 0
    std::thread w([&] { pin(0); for (size_t i = 0; i < n; ++i) buf[i] = float(rep + i % 7);
      double t0 = now(); sink = sink + readall(buf, n); own = now() - t0;
      for (size_t i = 0; i < n; ++i) buf[i] = float(rep + i % 5); });
    w.join();
    std::thread r([&] { pin(1); double t0 = now(); sink = sink + readall(buf, n); other = now() - t0; });
    r.join();
    printf("%.1f MiB: own-core read %.1f GB/s, other-core read (just written by cpu0) %.1f GB/s\n", bytes / 1048576.0, bytes / own / 1e9, bytes / other / 1e9);
  }
}
