// One-process A/B of the kv_compress kernels: A = main's build (libtrex_kernels.a), B = this
// worktree's kv_compressor.cc compiled with its entry points renamed (kvB_*). Alternating rounds,
// each side 7 calls a round (median), CPU time of the process (or wall with AB_WALL=1); prints
// the median of per-round B/A speed ratios, how many rounds B was faster, and whether every
// output byte matched.
//   ab fwd|bwd S HD RATIO THREADS ROUNDS [label]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {
void kv_compress_forward(const float*, const float*, const float*, float*, int64_t, int64_t, int,
                         core::ThreadPool*);
void kv_compress_backward(const float*, const float*, const float*, const float*, float*, float*,
                          float*, int64_t, int64_t, int, core::ThreadPool*);
void kvB_forward(const float*, const float*, const float*, float*, int64_t, int64_t, int,
                 core::ThreadPool*);
void kvB_backward(const float*, const float*, const float*, const float*, float*, float*, float*,
                  int64_t, int64_t, int, core::ThreadPool*);
}  // namespace trex::kernels
using namespace trex;

static double now(bool wall) {
  timespec t;
  clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}
static std::unique_ptr<float[], core::AlignedDeleter> arr(int64_t n, float lo, float hi, int seed) {
  auto a = core::aligned_array<float>(n);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < n; ++i) a[i] = d(g);
  return a;
}

int main(int argc, char** argv) {
  if (argc < 7) { std::fprintf(stderr, "usage: ab fwd|bwd S HD RATIO THREADS ROUNDS [label]\n"); return 2; }
  const bool fwd = std::strcmp(argv[1], "fwd") == 0;
  const int64_t s = atoll(argv[2]), hd = atoll(argv[3]);
  const int ratio = atoi(argv[4]), threads = atoi(argv[5]), rounds = atoi(argv[6]);
  const char* label = argc > 7 ? argv[7] : "";
  const bool wall = getenv("AB_WALL") != nullptr;
  const int64_t C = ratio == 4 ? 2 * hd : hd, n = s / ratio;
  core::ThreadPool pool(threads);
  auto kt = arr(s * C, -1, 1, 1), zt = arr(s * C, -2, 2, 2), ape = arr(ratio * C, 0, 0.5f, 3), dk = arr(n * hd, -1, 1, 4);
  auto ka = core::aligned_array<float>(n * hd), kb = core::aligned_array<float>(n * hd);
  auto dkta = core::aligned_array<float>(s * C), dztA = core::aligned_array<float>(s * C), dapea = core::aligned_array<float>(ratio * C);
  auto dktb = core::aligned_array<float>(s * C), dztB = core::aligned_array<float>(s * C), dapeb = core::aligned_array<float>(ratio * C);
  auto A = [&] {
    if (fwd) kernels::kv_compress_forward(kt.get(), zt.get(), ape.get(), ka.get(), s, hd, ratio, &pool);
    else kernels::kv_compress_backward(kt.get(), zt.get(), ape.get(), dk.get(), dkta.get(), dztA.get(), dapea.get(), s, hd, ratio, &pool);
  };
  const bool same_code = getenv("AB_SAME") != nullptr;  // control: B runs A's code on B's buffers
  auto B = [&] {
    if (same_code && fwd) kernels::kv_compress_forward(kt.get(), zt.get(), ape.get(), kb.get(), s, hd, ratio, &pool);
    else if (same_code) kernels::kv_compress_backward(kt.get(), zt.get(), ape.get(), dk.get(), dktb.get(), dztB.get(), dapeb.get(), s, hd, ratio, &pool);
    else if (fwd) kernels::kvB_forward(kt.get(), zt.get(), ape.get(), kb.get(), s, hd, ratio, &pool);
    else kernels::kvB_backward(kt.get(), zt.get(), ape.get(), dk.get(), dktb.get(), dztB.get(), dapeb.get(), s, hd, ratio, &pool);
  };
  A(); B();
  bool same = fwd ? std::memcmp(ka.get(), kb.get(), n * hd * 4) == 0
                  : std::memcmp(dkta.get(), dktb.get(), s * C * 4) == 0 && std::memcmp(dztA.get(), dztB.get(), s * C * 4) == 0 &&
                        std::memcmp(dapea.get(), dapeb.get(), ratio * C * 4) == 0;
  std::vector<double> ta, tb, ratios;
  int faster = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> a, b;
    auto time7 = [&](auto f, std::vector<double>& out) {
      for (int c = 0; c < 7; ++c) { double t0 = now(wall); f(); out.push_back(now(wall) - t0); }
    };
    if (r % 2 == 0) { time7(A, a); time7(B, b); } else { time7(B, b); time7(A, a); }
    const double ma = median(a), mb = median(b);
    ta.push_back(ma); tb.push_back(mb); ratios.push_back(ma / mb);
    faster += mb < ma;
  }
  A(); B();
  same = same && (fwd ? std::memcmp(ka.get(), kb.get(), n * hd * 4) == 0
                      : std::memcmp(dkta.get(), dktb.get(), s * C * 4) == 0 && std::memcmp(dztA.get(), dztB.get(), s * C * 4) == 0 &&
                            std::memcmp(dapea.get(), dapeb.get(), ratio * C * 4) == 0);
  const double bytes = fwd ? 4.0 * (2 * s * C + ratio * C + n * hd) : 4.0 * (4 * s * C + 2 * ratio * C + n * hd);
  std::sort(ratios.begin(), ratios.end());
  std::printf("%s %s %s [%lld,%lld] ratio %d threads %d: A %.3f ms (%.1f GB/s) B %.3f ms (%.1f GB/s); B/A speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              label, wall ? "wall" : "cpu", fwd ? "fwd" : "bwd", (long long)s, (long long)hd, ratio, threads,
              1e3 * median(ta), bytes / median(ta) / 1e9, 1e3 * median(tb), bytes / median(tb) / 1e9,
              median(ratios), faster, rounds, ratios.front(), ratios.back(), same ? "same" : "DIFFER");
  return same ? 0 : 1;
}
