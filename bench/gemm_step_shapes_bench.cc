// gemm_step_shapes_bench: trex sgemm on the v4-micro training step's GEMM shapes with their
// transposes (a routed expert's ~256 rows, the LM head forward and both backward products),
// best of 5 timed batches each, GFLOP/s (2 M N K per call). Written for issue 15's step work:
// the step's anatomy named the LM head and the experts, and packing's share of them.
//
//   TREX_THREADS=1 build/gemm_step_shapes_bench [ROWS] [INDEX]
//
// ROWS: the expert's row count (default 256); INDEX: run only that shape (0-based, in the order
// printed). Threads: TREX_THREADS (the default pool). Run two builds alternately in one quiet
// hold to compare them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"

namespace {

using trex::kernels::Trans;

struct Shape {
  const char* name;
  Trans ta, tb;
  int64_t m, n, k;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t r = argc > 1 ? std::atol(argv[1]) : 256;
  const int only = argc > 2 ? std::atoi(argv[2]) : -1;
  if (r < 1) {
    std::fprintf(stderr, "usage: gemm_step_shapes_bench [ROWS >= 1] [INDEX]\n");
    return 2;
  }
  const Shape shapes[] = {
      {"expert w1 fwd    N,T rx256x512", Trans::kNo, Trans::kYes, r, 256, 512},
      {"expert w2 fwd    N,T rx512x256", Trans::kNo, Trans::kYes, r, 512, 256},
      {"expert dh        N,N rx256x512", Trans::kNo, Trans::kNo, r, 256, 512},
      {"expert dW2       T,N 512x256xr", Trans::kYes, Trans::kNo, 512, 256, r},
      {"expert dW1       T,N 256x512xr", Trans::kYes, Trans::kNo, 256, 512, r},
      {"expert dx        N,N rx512x256", Trans::kNo, Trans::kNo, r, 512, 256},
      {"shared w1 fwd    N,T 2048x512x512", Trans::kNo, Trans::kYes, 2048, 512, 512},
      {"lm_head fwd      N,T 2048x8192x512", Trans::kNo, Trans::kYes, 2048, 8192, 512},
      {"lm_head.bwd dX   N,N 2048x512x8192", Trans::kNo, Trans::kNo, 2048, 512, 8192},
      {"lm_head.bwd dW   T,N 8192x512x2048", Trans::kYes, Trans::kNo, 8192, 512, 2048},
  };
  size_t most = 0;
  for (const Shape& s : shapes) most = std::max<size_t>(most, size_t(std::max({s.m * s.k, s.k * s.n, s.m * s.n})));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(most), b(most), c(most, 0.f);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  std::printf("threads %d\n", trex::core::default_thread_pool().num_threads());
  int idx = -1;
  for (const Shape& s : shapes) {
    if (++idx != only && only >= 0) continue;
    const int64_t lda = s.ta == Trans::kNo ? s.k : s.m, ldb = s.tb == Trans::kNo ? s.n : s.k;
    const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const int reps = std::max(3, int(3e9 / flop));
    double best = 1e30;
    for (int t = 0; t < 5; ++t) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i)
        trex::kernels::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 1.f,
                             c.data(), s.n);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
    std::printf("%2d %-36s %10.1f us %7.1f GFLOP/s\n", idx, s.name, best * 1e6, flop / best / 1e9);
  }
  return 0;
}
