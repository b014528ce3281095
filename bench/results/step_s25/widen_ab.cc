// One-process A/B of trex train's optimizer phase, v4-micro's size (79,765,880 parameters, one
// group), on the process-wide pool: A = the fused AdamW writing bf16 weights, then the trainer's
// widening pass (parallel_for of 1 Mi-element pieces, streaming bf16 -> fp32); B = the fused AdamW
// writing the widened weights itself (w_wide). Rounds alternate A B / B A; wall and process CPU
// time per variant, medians over rounds. The widened array starts OFFSET floats past a 64-byte
// boundary (default 0, as the model's parameters since session 25; 4 = 16 bytes, where a
// std::vector of 320 MB starts, as they did before), the state and gradient arrays on one.
// Usage: widen_ab [ROUNDS] [OFFSET]
// Build (from the repository root): g++ -O2 -std=c++20 -I src bench/results/step_s25/widen_ab.cc build/libtrex_kernels.a build/libtrex_core.a
//        build/libtrex_util.a -lpthread
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/bf16_stream.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/adamw.h"

using namespace trex;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

int main(int argc, char** argv) {
  const int64_t n = 79765880;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const int offset = argc > 2 ? std::atoi(argv[2]) : 0;
  core::ThreadPool& pool = core::default_thread_pool();
  auto theta = core::aligned_array<float>(size_t(n)), m = core::aligned_array<float>(size_t(n)),
       v = core::aligned_array<float>(size_t(n)), g = core::aligned_array<float>(size_t(n)),
       params_buf = core::aligned_array<float>(size_t(n) + 16);
  float* const params = params_buf.get() + offset;
  auto w = core::aligned_array<core::bf16>(size_t(n));
  pool.parallel_for(0, n, 1 << 20, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      theta[i] = 0.01f * float(i % 1000 - 500);
      m[i] = 0.f;
      v[i] = 0.f;
      g[i] = 1e-3f * float(i % 777 - 388);
      params[i] = 0.f;
    }
  });
  kernels::AdamWScalars sc = kernels::adamw_scalars({1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f}, 1);
  auto run = [&](bool fused) {
    if (fused) {
      kernels::adamw_update(sc, theta.get(), m.get(), v.get(), g.get(), w.get(), n, &pool, nullptr, params);
    } else {
      kernels::adamw_update(sc, theta.get(), m.get(), v.get(), g.get(), w.get(), n, &pool);
      pool.parallel_for(0, n, int64_t(1) << 20, [&](int64_t lo, int64_t hi) {
        core::bf16_to_fp32_stream(w.get() + lo, params + lo, size_t(hi - lo));
      });
    }
  };
  run(false);
  run(true);
  std::vector<double> wall[2], cpu[2], ratio;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const bool fused = (r % 2 == 0) ? k == 1 : k == 0;
      double w0 = now_s(), c0 = cpu_s();
      run(fused);
      t[fused] = now_s() - w0;
      wall[fused].push_back(t[fused]);
      cpu[fused].push_back(cpu_s() - c0);
    }
    ratio.push_back(t[0] / t[1]);
  }
  auto med = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  int wins = 0;
  for (double x : ratio) wins += x > 1;
  std::printf("threads %d rounds %d offset %d floats\n", pool.num_threads(), rounds, offset);
  std::printf("A step+widen: wall %.2f ms cpu %.2f ms\n", 1e3 * med(wall[0]), 1e3 * med(cpu[0]));
  std::printf("B fused:      wall %.2f ms cpu %.2f ms\n", 1e3 * med(wall[1]), 1e3 * med(cpu[1]));
  std::printf("A/B wall per round:");
  for (double x : ratio) std::printf(" %.3f", x);
  std::printf("  median %.3f (%d/%d rounds B faster); cpu A/B %.3f\n", med(ratio), wins, rounds,
              med(cpu[0]) / med(cpu[1]));
}
