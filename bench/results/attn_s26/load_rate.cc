// Loads per cycle beside 512-bit FMAs on this machine: 16 independent FMA chains a step, with
// 0 loads, the O product's 8 broadcasts + 2 vector loads, the dot tiles' 8 vector loads, and the
// pair-lane dots' 16 64-bit broadcasts + 4 vector loads (all from a 4 KiB L1 buffer). One
// thread, thread CPU time, rounds alternating over the kinds; GFLOP/s of the FMAs (32 a FMA).
#include <immintrin.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <time.h>
#include <vector>
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
alignas(64) float buf[4096];
template <int kKind>
__attribute__((noinline)) float run(long steps) {
  __m512 c[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) c[i] = _mm512_set1_ps(float(i) * 1e-9f);
  __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  const float* p = buf;
  for (long s = 0; s < steps; ++s) {
    const float* q = p + (s & 15) * 64;
    if constexpr (kKind == 0) {
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) c[i] = _mm512_fmadd_ps(x, y, c[i]);
    } else if constexpr (kKind == 1) {  // 8 broadcasts + 2 loads
      __m512 b0 = _mm512_loadu_ps(q), b1 = _mm512_loadu_ps(q + 16);
      asm("" : "+v"(b0), "+v"(b1));
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        __m512 a = _mm512_set1_ps(q[32 + r]);
        asm("" : "+v"(a));
        c[2 * r] = _mm512_fmadd_ps(a, b0, c[2 * r]);
        c[2 * r + 1] = _mm512_fmadd_ps(a, b1, c[2 * r + 1]);
      }
    } else if constexpr (kKind == 2) {  // 8 vector loads
      __m512 b[4], a[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) { b[i] = _mm512_loadu_ps(q + 16 * i); asm("" : "+v"(b[i])); }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) { a[i] = _mm512_loadu_ps(q + 1024 + 16 * i); asm("" : "+v"(a[i])); }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) c[4 * i + j] = _mm512_fmadd_ps(a[i], b[j], c[4 * i + j]);
    } else {  // 16 64-bit broadcasts + 4 vector loads
#pragma GCC unroll 4
      for (int qq = 0; qq < 4; ++qq) {
        __m512 xv = _mm512_loadu_ps(q + 16 * qq);
        asm("" : "+v"(xv));
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          double d;
          std::memcpy(&d, q + 64 + 2 * (4 * qq + r), 8);
          __m512 a = _mm512_castpd_ps(_mm512_set1_pd(d));
          asm("" : "+v"(a));
          c[4 * r + qq] = _mm512_fmadd_ps(a, xv, c[4 * r + qq]);
        }
      }
    }
  }
  __m512 s = c[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, c[i]);
  return _mm512_reduce_add_ps(s);
}
int main() {
  for (int i = 0; i < 4096; ++i) buf[i] = 1e-3f * (i % 7);
  const long steps = 2000000;
  const char* name[4] = {"16 FMA, no loads", "16 FMA + 8 bcast32 + 2 loads (O = P K)", "16 FMA + 8 loads (dot tile)", "16 FMA + 16 bcast64 + 4 loads (pair lanes)"};
  std::vector<double> g[4];
  float sink = 0;
  for (int r = 0; r < 9; ++r)
    for (int k = 0; k < 4; ++k) {
      double t = tcpu();
      sink += k == 0 ? run<0>(steps) : k == 1 ? run<1>(steps) : k == 2 ? run<2>(steps) : run<3>(steps);
      g[k].push_back(16.0 * 32 * steps / (tcpu() - t) / 1e9);
    }
  for (int k = 0; k < 4; ++k) {
    std::sort(g[k].begin(), g[k].end());
    std::printf("%-46s median %.1f GFLOP/s (min %.1f max %.1f), %.2f of the no-load loop\n", name[k], g[k][4], g[k][0], g[k][8], g[k][4] / g[0][4]);
  }
  return sink == 12345.f;
}
