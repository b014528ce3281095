// Fraction of the FMA rate each of the sparse attention backward's products runs at, one thread,
// at the backward's per-token shapes (ratio 4, full token: H 8, window 64, 64 compressed keys, hd
// 128): dot_tiles over 64 scattered compressed rows (of 512, in L2 like kv_comp's 256 KiB), the
// window's column_dots over a transposed key block (KeyColumns' ld 144), and for reference the
// outer products (dQ = dS K over 128 keys; the window's dK rows, 64 x 128 over 2H). Each product
// alternates with a register-only loop of 12 independent 512-bit FMA chains (the FMA rate) in the
// same thread; thread CPU time; median over rounds of product rate / FMA-loop rate.
// tiles_rate ROUNDS REPS   (session 24, attn round 2)
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "trex/kernels/attention_tiles.h"

using namespace trex::kernels::attn_detail;
static double cpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }

// 12 independent accumulators in named registers, acc = acc m + b (hw_probe.cc's fma_peak_avx512).
#define FMA12(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)
__attribute__((noinline)) double fma_loop(long iters, float seed) {
  const __m512 m = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
#define INIT(k) __m512 a##k = _mm512_set1_ps(seed * float(k + 1));
  FMA12(INIT)
  for (long i = 0; i < iters; ++i) {
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, m, b);
    FMA12(STEP)
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(k) s = _mm512_add_ps(s, a##k);
  FMA12(SUM)
  return double(_mm512_cvtss_f32(s));
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 9, reps = argc > 2 ? atoi(argv[2]) : 2000;
  const int64_t H = 8, hd = 128, nw = 64, nc = 64, ncomp = 512, ld = 144, n = nw + nc;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  auto filled = [&](size_t m) { std::vector<float> v(m); for (float& x : v) x = u(rng); return v; };
  std::vector<float> q = filled(size_t(2 * H * hd)), comp = filled(size_t(ncomp * hd)), kT = filled(size_t(hd * ld + 64));
  std::vector<float> kv = filled(size_t(256 * hd)), P = filled(size_t(2 * H * n)), out(size_t(4 * H * n + nw * hd + 64));
  std::vector<float> dq(size_t(H * hd)), dwin(size_t((nw + 64) * hd));
  std::vector<const float*> qrows(static_cast<size_t>(2 * H)), krow(static_cast<size_t>(n));
  for (int64_t h = 0; h < 2 * H; ++h) qrows[size_t(h)] = q.data() + h * hd;
  std::vector<std::vector<const float*>> sets(64);  // 64 different compressed-key sets
  for (auto& s : sets) {
    std::vector<int> all(ncomp);
    for (int i = 0; i < ncomp; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t j = 0; j < nc; ++j) s.push_back(comp.data() + all[size_t(j)] * hd);
  }
  for (int64_t j = 0; j < n; ++j) krow[size_t(j)] = j < nw ? kv.data() + (j + 100) * hd : sets[0][size_t(j - nw)];
  const float tau = 0.088f;
  // FLOPs per call of each kind, as 2 x multiply-adds.
  struct Kind { const char* name; double flops; };
  const Kind kinds[5] = {{"dot_tiles (2 x 8 x 64 x 128)", 2.0 * 2 * H * nc * hd},
                         {"column_dots (2 x 8 x 64 x 128)", 2.0 * 2 * H * nw * hd},
                         {"outer_tiles dQ (8 x 128 x 128)", 2.0 * H * hd * n},
                         {"outer_tiles dK win (64 x 128 x 16)", 2.0 * nw * hd * 2 * H},
                         {"dot_tiles, one key set (L1)", 2.0 * 2 * H * nc * hd}};
  auto run = [&](int k, int r) {
    const int s = r % 64;
    switch (k) {
      case 0:  // S and dP's compressed columns, as the backward calls them
        dot_tiles(H, nc, hd, qrows.data(), sets[size_t(s)].data(), tau, out.data() + nw, n);
        dot_tiles(H, nc, hd, qrows.data() + H, sets[size_t(s)].data(), 1.f, out.data() + H * n + nw, n);
        break;
      case 1:  // the window's columns, the window starting at column 1 + s % 16 of the block
        column_dots(H, nw, hd, qrows.data(), kT.data() + 1 + s % 16, ld, tau, out.data(), n);
        column_dots(H, nw, hd, qrows.data() + H, kT.data() + 1 + s % 16, ld, 1.f, out.data() + H * n, n);
        break;
      case 2: outer_tiles(H, hd, n, P.data(), n, 1, krow.data(), dq.data(), hd, false); break;
      case 3: outer_tiles(nw, hd, 2 * H, P.data(), 1, n, qrows.data(), dwin.data() + (s % 16) * hd, hd, true); break;
      case 4:  // dot_tiles over the same 64 rows every call: the keys stay in L1
        dot_tiles(H, nc, hd, qrows.data(), sets[0].data(), tau, out.data() + nw, n);
        dot_tiles(H, nc, hd, qrows.data() + H, sets[0].data(), 1.f, out.data() + H * n + nw, n);
        break;
    }
  };
  volatile long fma_n = 4000000;
  const long fma_iters = fma_n;
  const double fma_flops = double(fma_iters) * 12 * 32;
  std::vector<double> ratio[5], rate[5], peak;
  volatile double sink = 0;
  for (int k = 0; k < 5; ++k) for (int r = 0; r < 50; ++r) run(k, r);
  sink = sink + fma_loop(fma_iters, 1.f);
  for (int round = 0; round < rounds; ++round) {
    double t0 = cpu();
    sink = sink + fma_loop(fma_iters, float(round + 2) * 0.5f);
    const double fr = fma_flops / (cpu() - t0);
    peak.push_back(fr);
    for (int k = 0; k < 5; ++k) {
      t0 = cpu();
      for (int r = 0; r < reps; ++r) run(k, r);
      const double pr = kinds[k].flops * reps / (cpu() - t0);
      rate[k].push_back(pr);
      ratio[k].push_back(pr / fr);
    }
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::printf("FMA loop (12 chains): median %.1f GFLOP/s\n", med(peak) / 1e9);
  for (int k = 0; k < 5; ++k) {
    std::vector<double> v = ratio[k];
    std::sort(v.begin(), v.end());
    std::printf("%-38s median %.1f GFLOP/s, of the FMA loop: median %.3f (min %.3f max %.3f)\n", kinds[k].name,
                med(rate[k]) / 1e9, med(ratio[k]), v.front(), v.back());
  }
  return sink == 12345.0;
}
