// The RMSNorm forward at the model's fp32 shapes on a pool of 2 threads (review MEDIUM on
// a1c976a), or with ONE=1 on one thread at aura's one-thread RMSNorm shapes: 400 timed calls
// after 50 warm-up calls, each call's wall time; prints the median, p10 and p90 in us per shape. Built twice (run.sh): against session 28's start (7a0a6fd) and
// against main; run.sh alternates the two binaries.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/kernels/rmsnorm.h"

int main() {
  const bool one = std::getenv("ONE") != nullptr;
  trex::core::ThreadPool pool(one ? 1 : 2);
  const std::vector<std::pair<int64_t, int64_t>> two_shapes = {{2048, 512}, {2048, 1024}, {4096, 512}};
  const std::vector<std::pair<int64_t, int64_t>> one_shapes = {{512, 4096}, {384, 4096}, {128, 4096}};
  for (auto [rows, dim] : one ? one_shapes : two_shapes) {
    const size_t n = size_t(rows * dim);
    float* x = static_cast<float*>(std::aligned_alloc(64, n * 4));
    float* y = static_cast<float*>(std::aligned_alloc(64, n * 4));
    std::vector<float> w(size_t(dim), 1.1f);
    for (size_t i = 0; i < n; ++i) x[i] = float((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    std::vector<double> t;
    for (int c = 0; c < 450; ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      trex::kernels::rmsnorm_forward(x, w.data(), y, rows, dim, 1e-6f, &pool);
      const auto t1 = std::chrono::steady_clock::now();
      if (c >= 50) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(t.begin(), t.end());
    double h = 0;
    for (size_t i = 0; i < n; i += 61) h += y[i];
    std::printf("%lldx%lld median %.1f p10 %.1f p90 %.1f us (check %.6g)\n", (long long)rows, (long long)dim,
                t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10], h);
    std::free(x);
    std::free(y);
  }
}
