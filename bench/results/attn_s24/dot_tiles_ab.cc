// dot_tiles A (the worktree's attention_tiles.cc) against B (a copy with dot_tiles_variants.patch.txt applied,
// built with -Dattn_detail=attn_detail_b and one of -DVARIANT_BLEND, -DVARIANT_UNROLL,
// -DVARIANT_NORED): the bits of every output over 100 shapes first, then the backward's two
// compressed-key dot_tiles calls (H 8, 64 of 512 rows, hd 128) alternating A and B per round,
// thread CPU time. dot_tiles_ab ROUNDS REPS (session 24, attn round 2).
#include <immintrin.h>
#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "trex/kernels/attention_tiles.h"
namespace trex::kernels::attn_detail_b {
void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b, float alpha, float* C, int64_t ldc);
}
static double cpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 11, reps = argc > 2 ? atoi(argv[2]) : 2000;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  // same bits over shapes
  long bad = 0, checked = 0;
  for (int64_t M : {1, 3, 4, 8, 16}) for (int64_t N : {1, 5, 16, 64}) for (int64_t K : {16, 17, 64, 128, 130}) {
    std::vector<float> A(size_t(M * K)), B(size_t(N * K));
    for (float& x : A) x = u(rng) * (rng() % 7 == 0 ? 1e6f : 1.f);
    for (float& x : B) x = u(rng);
    std::vector<const float*> ar, br;
    for (int64_t i = 0; i < M; ++i) ar.push_back(A.data() + i * K);
    for (int64_t j = 0; j < N; ++j) br.push_back(B.data() + j * K);
    std::vector<float> c1(size_t(M * N), NAN), c2(size_t(M * N), NAN);
    trex::kernels::attn_detail::dot_tiles(M, N, K, ar.data(), br.data(), 0.37f, c1.data(), N);
    trex::kernels::attn_detail_b::dot_tiles(M, N, K, ar.data(), br.data(), 0.37f, c2.data(), N);
    checked += M * N;
    bad += std::memcmp(c1.data(), c2.data(), c1.size() * 4) != 0;
  }
  std::printf("same-bits check: %ld shapes differ, %ld outputs compared\n", bad, checked);
  const int64_t H = 8, hd = 128, nc = 64, ncomp = 512, n = 128;
  std::vector<float> q(size_t(2 * H * hd)), comp(size_t(ncomp * hd)), out(size_t(2 * H * n));
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
        trex::kernels::attn_detail::dot_tiles(H, nc, hd, qrows.data(), s.data(), 0.088f, out.data() + 64, n);
        trex::kernels::attn_detail::dot_tiles(H, nc, hd, qrows.data() + H, s.data(), 1.f, out.data() + H * n + 64, n);
      } else {
        trex::kernels::attn_detail_b::dot_tiles(H, nc, hd, qrows.data(), s.data(), 0.088f, out.data() + 64, n);
        trex::kernels::attn_detail_b::dot_tiles(H, nc, hd, qrows.data() + H, s.data(), 1.f, out.data() + H * n + 64, n);
      }
    }
  };
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
  std::printf("dot_tiles A %.1f GFLOP/s, B %.1f GFLOP/s (medians); time A/B median %.3f (%d/%zu rounds B faster)\n", med(ra), med(rb), med(ratio), wins, ratio.size());
}
