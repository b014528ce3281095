// attention_tiles A (main's attention_tiles.cc) against B (the worktree's, built with
// -Dattn_detail=attn_detail_b): bits of outer_tiles / outer_tiles_rows / dot_tiles over shapes
// first, then the backward's per-token products at ratio 4 (H 8, hd 128, window 64, 64 of 512
// compressed rows) alternating A and B per round, thread CPU time.
// outer_ab ROUNDS REPS KIND (KIND: 0 dK window outer, 1 dQ outer, 2 compressed dK outer rows,
// 3 dot_tiles S + dP)   (session 25, attn)
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "trex/kernels/attention_tiles.h"
namespace trex::kernels::attn_detail_b {
void dot_tiles(int64_t M, int64_t N, int64_t K, const float* const* a, const float* const* b, float alpha, float* C,
               int64_t ldc);
void outer_tiles(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk, const float* const* b,
                 float* C, int64_t ldc, bool accumulate);
void outer_tiles_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t si, int64_t sk,
                      const float* const* b, float* const* crow, bool accumulate);
}  // namespace trex::kernels::attn_detail_b
namespace A = trex::kernels::attn_detail;
namespace B = trex::kernels::attn_detail_b;
static double cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 11, reps = argc > 2 ? atoi(argv[2]) : 2000;
  const int kind = argc > 3 ? atoi(argv[3]) : 0;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  long bad = 0, checked = 0;
  for (int64_t M : {1, 3, 4, 7, 8, 9, 16, 64, 70})
    for (int64_t N : {1, 5, 16, 17, 64, 128, 130})
      for (int64_t K : {1, 3, 16, 17, 64, 128})
        for (int acc = 0; acc < 2; ++acc)
          for (int strided = 0; strided < 2; ++strided) {
            const int64_t si = strided ? 1 : K, sk = strided ? M : 1;
            std::vector<float> Am(size_t(M * K)), Bm(size_t(K * N)), C0(size_t(M * N));
            for (float& x : Am) x = u(rng) * (rng() % 7 == 0 ? 1e6f : 1.f);
            for (float& x : Bm) x = u(rng);
            for (float& x : C0) x = u(rng);
            std::vector<const float*> br;
            for (int64_t k = 0; k < K; ++k) br.push_back(Bm.data() + k * N);
            std::vector<float> c1 = C0, c2 = C0, r1 = C0, r2 = C0;
            A::outer_tiles(M, N, K, Am.data(), si, sk, br.data(), c1.data(), N, acc);
            B::outer_tiles(M, N, K, Am.data(), si, sk, br.data(), c2.data(), N, acc);
            std::vector<float*> p1, p2;
            for (int64_t i = 0; i < M; ++i) p1.push_back(r1.data() + ((i * 5) % M) * N), p2.push_back(r2.data() + ((i * 5) % M) * N);
            if (std::__gcd<int64_t>(5, M) == 1) {
              A::outer_tiles_rows(M, N, K, Am.data(), si, sk, br.data(), p1.data(), acc);
              B::outer_tiles_rows(M, N, K, Am.data(), si, sk, br.data(), p2.data(), acc);
            }
            checked += 2 * M * N;
            bad += std::memcmp(c1.data(), c2.data(), c1.size() * 4) != 0;
            bad += std::memcmp(r1.data(), r2.data(), r1.size() * 4) != 0;
            if (!acc && !strided) {
              std::vector<float> Dm(size_t(N * K));
              for (float& x : Dm) x = u(rng);
              std::vector<const float*> ar, dr;
              for (int64_t i = 0; i < M; ++i) ar.push_back(Am.data() + i * K);
              for (int64_t j = 0; j < N; ++j) dr.push_back(Dm.data() + j * K);
              std::vector<float> d1(size_t(M * N)), d2(size_t(M * N));
              A::dot_tiles(M, N, K, ar.data(), dr.data(), 0.37f, d1.data(), N);
              B::dot_tiles(M, N, K, ar.data(), dr.data(), 0.37f, d2.data(), N);
              checked += M * N;
              bad += std::memcmp(d1.data(), d2.data(), d1.size() * 4) != 0;
            }
          }
  std::printf("same-bits check: %ld cases differ, %ld outputs compared\n", bad, checked);
  const int64_t H = 8, hd = 128, nw = 64, nc = 64, ncomp = 512, n = nw + nc;
  std::vector<float> q(size_t(2 * H * hd)), comp(size_t(ncomp * hd)), kv(size_t(256 * hd)), P(size_t(2 * H * n)),
      out(size_t(2 * H * n)), dq(size_t(H * hd)), dwin(size_t((nw + 64) * hd)), dcomp(size_t(ncomp * hd));
  for (auto* v : {&q, &comp, &kv, &P}) for (float& x : *v) x = u(rng);
  std::vector<const float*> qrows;
  for (int64_t h = 0; h < 2 * H; ++h) qrows.push_back(q.data() + h * hd);
  std::vector<std::vector<const float*>> sets(64);
  std::vector<std::vector<float*>> csets(64);
  for (int si = 0; si < 64; ++si) {
    std::vector<int> all(ncomp);
    for (int i = 0; i < ncomp; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    for (int j = 0; j < nc; ++j) sets[size_t(si)].push_back(comp.data() + all[size_t(j)] * hd), csets[size_t(si)].push_back(dcomp.data() + all[size_t(j)] * hd);
  }
  std::vector<std::vector<const float*>> krow(64);
  for (int si = 0; si < 64; ++si)
    for (int64_t j = 0; j < n; ++j) krow[size_t(si)].push_back(j < nw ? kv.data() + (j + 100) * hd : sets[size_t(si)][size_t(j - nw)]);
  double flops_call = 0;
  if (kind == 0) flops_call = 2.0 * nw * hd * 2 * H;
  if (kind == 1) flops_call = 2.0 * H * hd * n;
  if (kind == 2) flops_call = 2.0 * nc * hd * 2 * H;
  if (kind == 3) flops_call = 2.0 * 2 * H * nc * hd;
  auto run = [&](int impl) {
    for (int r = 0; r < reps; ++r) {
      const int s = r % 64;
      switch (kind) {
        case 0:
          if (impl == 0) A::outer_tiles(nw, hd, 2 * H, P.data(), 1, n, qrows.data(), dwin.data() + (s % 16) * hd, hd, true);
          else B::outer_tiles(nw, hd, 2 * H, P.data(), 1, n, qrows.data(), dwin.data() + (s % 16) * hd, hd, true);
          break;
        case 1:
          if (impl == 0) A::outer_tiles(H, hd, n, P.data(), n, 1, krow[size_t(s)].data(), dq.data(), hd, false);
          else B::outer_tiles(H, hd, n, P.data(), n, 1, krow[size_t(s)].data(), dq.data(), hd, false);
          break;
        case 2:
          if (impl == 0) A::outer_tiles_rows(nc, hd, 2 * H, P.data() + nw, 1, n, qrows.data(), csets[size_t(s)].data(), true);
          else B::outer_tiles_rows(nc, hd, 2 * H, P.data() + nw, 1, n, qrows.data(), csets[size_t(s)].data(), true);
          break;
        case 3:
          if (impl == 0) {
            A::dot_tiles(H, nc, hd, qrows.data(), sets[size_t(s)].data(), 0.088f, out.data() + nw, n);
            A::dot_tiles(H, nc, hd, qrows.data() + H, sets[size_t(s)].data(), 1.f, out.data() + H * n + nw, n);
          } else {
            B::dot_tiles(H, nc, hd, qrows.data(), sets[size_t(s)].data(), 0.088f, out.data() + nw, n);
            B::dot_tiles(H, nc, hd, qrows.data() + H, sets[size_t(s)].data(), 1.f, out.data() + H * n + nw, n);
          }
          break;
      }
    }
  };
  run(0);
  run(1);
  std::vector<double> ratio, ra, rb;
  for (int round = 0; round < rounds; ++round) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const int impl = (round + k) % 2;
      const double t0 = cpu();
      run(impl);
      t[impl] = cpu() - t0;
    }
    ratio.push_back(t[0] / t[1]);
    ra.push_back(flops_call * reps / t[0] / 1e9);
    rb.push_back(flops_call * reps / t[1] / 1e9);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  int wins = 0;
  for (double r : ratio) wins += r > 1;
  std::printf("kind %d: A %.1f GFLOP/s, B %.1f GFLOP/s (medians); time A/B median %.3f (%d/%zu rounds B faster)\n", kind,
              med(ra), med(rb), med(ratio), wins, ratio.size());
}
