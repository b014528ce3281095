#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>
#include <algorithm>
#include <time.h>
#include <immintrin.h>
#define DECL(ns) namespace trex::kernels::ns { void column_dots(int64_t M, int64_t N, int64_t K, const float* const* a, const float* kT, int64_t ldk, float alpha, float* C, int64_t ldc); \
  void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b, float alpha, float* C, int64_t ldc); \
  void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk, const float* const* b, float* C, int64_t ldc, bool accumulate); }
DECL(attn_new) DECL(attn_e8)
namespace A = trex::kernels::attn_new;
namespace B = trex::kernels::attn_e8;
static double cpus(){timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main() {
  // accuracy: 64 x 64 scores of N(0,1) data at K 128 (as the test), units sum|ab| 2^-24
  for (int K : {16, 128}) {
    std::mt19937 rng(42); std::normal_distribution<float> nd(0, 1);
    const int M = 64, N = 64;
    std::vector<float> Am(M * K), KT(K * N), Bm(N * K), C1(M * N), C2(M * N), C3(M * N);
    for (auto& x : Am) x = nd(rng);
    for (int j = 0; j < N; ++j) for (int k = 0; k < K; ++k) Bm[j * K + k] = KT[k * N + j] = nd(rng);
    std::vector<const float*> a(M), b(N);
    for (int i = 0; i < M; ++i) a[i] = Am.data() + i * K;
    for (int j = 0; j < N; ++j) b[j] = Bm.data() + j * K;
    A::dot_tiles(M, N, K, a.data(), b.data(), 1.f, C1.data(), N);
    A::column_dots(M, N, K, a.data(), KT.data(), N, 1.f, C2.data(), N);
    B::column_dots(M, N, K, a.data(), KT.data(), N, 1.f, C3.data(), N);
    long double e[3] = {0, 0, 0};
    for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
      long double ref = 0, mag = 0;
      for (int k = 0; k < K; ++k) ref += (long double)Am[i * K + k] * Bm[j * K + k], mag += fabsl((long double)Am[i * K + k] * Bm[j * K + k]);
      const long double unit = mag * ldexpl(1, -24);
      e[0] += fabsl(C1[i * N + j] - ref) / unit; e[1] += fabsl(C2[i * N + j] - ref) / unit; e[2] += fabsl(C3[i * N + j] - ref) / unit;
    }
    printf("K %d mean error (units sum|ab| 2^-24): dot_tiles %.3Lf, quarters %.3Lf, eighths %.3Lf\n", K, e[0] / (M * N), e[1] / (M * N), e[2] / (M * N));
  }
  // cost: the forward's window scores at the step's shape (8 heads, hd 128, window 64), tokens in order, q streaming with the kernel's prefetch
  const int H = 8, hd = 128, W = 64, ld = 144, S = 2048 + 8;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> ring(size_t(hd) * ld * 4 + 64), q(size_t(S) * H * hd), Sc(4 * H * 64);
  for (auto& x : ring) x = u(rng);
  for (auto& x : q) x = u(rng);
  float* base = (float*)(((uintptr_t)ring.data() + 63) & ~uintptr_t(63));
  std::vector<double> all[4];
  for (int round = 0; round < 21; ++round)
    for (int mode = 0; mode < 4; ++mode) {
      const bool e8 = mode & 1, hot = mode >= 2;
      double t0 = cpus();
      for (int t = 64; t < S - 8; ++t) {
        const int tq = hot ? 100 + (t & 3) : t;
        const float* qr[8];
        for (int h = 0; h < H; ++h) qr[h] = q.data() + (size_t(tq) * H + h) * hd;
        const char* pp = (const char*)(q.data() + size_t(t + 4) * H * hd);
        if (!hot) for (int l = 0; l < 64; ++l) _mm_prefetch(pp + 64 * l, _MM_HINT_T0);
        const float* kw = base + size_t((t / W) % 4) * hd * ld + (t % W + 1);
        (e8 ? B::column_dots : A::column_dots)(H, W, hd, qr, kw, ld, 0.1f, Sc.data() + (t & 3) * H * 64, 64);
      }
      all[mode].push_back((cpus() - t0) / (S - 72) * 1e9);
    }
  const char* names[] = {"quarters, q streaming", "eighths, q streaming", "quarters, q in L1", "eighths, q in L1"};
  for (int m = 0; m < 4; ++m) { auto& ts = all[m]; std::sort(ts.begin(), ts.end()); printf("%-24s %5.0f ns per token (min %.0f)\n", names[m], ts[ts.size() / 2], ts[0]); }
}
