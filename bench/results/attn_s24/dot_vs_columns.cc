// Estimate of the column form for the backward's compressed keys (not a kernel change): per
// token, its 64 gathered compressed rows (of 512, hd 128) transposed into a [hd][ld] block by
// 16 x 16 transposes, then S and dP by column_dots (two calls, H 8), against the two dot_tiles
// calls the backward makes. Alternating per round, thread CPU time, one thread. Different bits
// (column_dots' four chains against dot_tiles' 16 lanes): the sums' order would change in the
// forward and backward. dot_vs_columns ROUNDS REPS (session 24, attn round 2).
#include <immintrin.h>
#include <time.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "trex/kernels/attention_tiles.h"
using namespace trex::kernels::attn_detail;
static double cpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
// dst[m * ldd + i] = src_i[m] for i, m < 16 (rows given by pointers): unpacks, shuffle_ps and
// shuffle_f32x4, as KeyColumns::transpose16 in sparse_attention.cc.
static inline void transpose16(const float* const* src, int64_t e, float* dst, int64_t ldd) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    const __m512 a = _mm512_loadu_ps(src[2 * i] + e), b = _mm512_loadu_ps(src[2 * i + 1] + e);
    t[2 * i] = _mm512_unpacklo_ps(a, b);
    t[2 * i + 1] = _mm512_unpackhi_ps(a, b);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), v3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
    _mm512_storeu_ps(dst + (m + 0) * ldd, _mm512_shuffle_f32x4(v0, v2, 0x88));
    _mm512_storeu_ps(dst + (m + 4) * ldd, _mm512_shuffle_f32x4(v1, v3, 0x88));
    _mm512_storeu_ps(dst + (m + 8) * ldd, _mm512_shuffle_f32x4(v0, v2, 0xDD));
    _mm512_storeu_ps(dst + (m + 12) * ldd, _mm512_shuffle_f32x4(v1, v3, 0xDD));
  }
}
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21, reps = argc > 2 ? atoi(argv[2]) : 4000;
  const int64_t H = 8, hd = 128, nc = 64, ncomp = 512, n = 128, ld = 80;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> q(size_t(2 * H * hd)), comp(size_t(ncomp * hd)), out(size_t(2 * H * n)), kT(size_t(hd * ld));
  for (float& x : q) x = u(rng);
  for (float& x : comp) x = u(rng);
  std::vector<const float*> qrows;
  for (int64_t h = 0; h < 2 * H; ++h) qrows.push_back(q.data() + h * hd);
  std::vector<std::vector<const float*>> sets(64);
  for (auto& s : sets) { std::vector<int> all(ncomp); for (int i = 0; i < ncomp; ++i) all[i] = i; std::shuffle(all.begin(), all.end(), rng); for (int j = 0; j < nc; ++j) s.push_back(comp.data() + all[size_t(j)] * hd); }
  auto run = [&](int impl) {
    for (int r = 0; r < reps; ++r) {
      const auto& s = sets[size_t(r % 64)];
      if (impl == 0) {
        dot_tiles(H, nc, hd, qrows.data(), s.data(), 0.088f, out.data() + 64, n);
        dot_tiles(H, nc, hd, qrows.data() + H, s.data(), 1.f, out.data() + H * n + 64, n);
      } else {
        for (int64_t j0 = 0; j0 < nc; j0 += 16)
          for (int64_t e = 0; e < hd; e += 16) transpose16(s.data() + j0, e, kT.data() + e * ld + j0, ld);
        column_dots(H, nc, hd, qrows.data(), kT.data(), ld, 0.088f, out.data() + 64, n);
        column_dots(H, nc, hd, qrows.data() + H, kT.data(), ld, 1.f, out.data() + H * n + 64, n);
      }
    }
  };
  {  // both forms agree to rounding (the check that the timed column form computes S and dP)
    std::vector<float> a(out.size()), b(out.size());
    const int save = reps;
    (void)save;
    const auto& s = sets[3];
    dot_tiles(H, nc, hd, qrows.data(), s.data(), 0.088f, a.data() + 64, n);
    dot_tiles(H, nc, hd, qrows.data() + H, s.data(), 1.f, a.data() + H * n + 64, n);
    for (int64_t j0 = 0; j0 < nc; j0 += 16)
      for (int64_t e = 0; e < hd; e += 16) transpose16(s.data() + j0, e, kT.data() + e * ld + j0, ld);
    column_dots(H, nc, hd, qrows.data(), kT.data(), ld, 0.088f, b.data() + 64, n);
    column_dots(H, nc, hd, qrows.data() + H, kT.data(), ld, 1.f, b.data() + H * n + 64, n);
    double worst = 0;
    for (int64_t r = 0; r < 2 * H; ++r)
      for (int64_t j = 64; j < 128; ++j) worst = std::max(worst, double(std::abs(a[size_t(r * n + j)] - b[size_t(r * n + j)])));
    std::printf("largest |dot - column| over the 2 x 8 x 64 scores: %.3g\n", worst);
  }
  run(0); run(1);
  std::vector<double> ratio, ra, rb;
  const double flops = 2.0 * 2 * H * nc * hd * reps;
  for (int round = 0; round < rounds; ++round) {
    double t[2];
    for (int k = 0; k < 2; ++k) { const int impl = (round + k) % 2; const double t0 = cpu(); run(impl); t[impl] = cpu() - t0; }
    ratio.push_back(t[0] / t[1]); ra.push_back(flops / t[0] / 1e9); rb.push_back(flops / t[1] / 1e9);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  int wins = 0; for (double r : ratio) wins += r > 1;
  std::printf("S and dP over 64 compressed keys: dot_tiles %.1f GFLOP/s, transpose + column_dots %.1f GFLOP/s (medians, the products' FLOPs); time dot/column median %.3f (%d/%zu rounds the column form faster)\n", med(ra), med(rb), med(ratio), wins, ratio.size());
}
