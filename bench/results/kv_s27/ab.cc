// One-process A/B of the kv_compress kernels between two of: "main" (main's build,
// libtrex_kernels.a, unrenamed), "a" and "b" (a kv_compressor.cc each, compiled with its entry
// points renamed kvA_* / kvB_* by abbuild.sh). Alternating rounds, each side 7 calls a round
// (median), CPU time of the process (or wall with AB_WALL=1); prints the median of per-round
// X/Y speed ratios (Y's speed over X's: > 1 when Y is faster), how many rounds Y was faster, and
// whether every output byte matched. AB_WARM_YX=1: the first (warm-up) calls run Y before X.
// Each copy has thread-local scratch of its own (the ratio-4 backward's per-chunk dape sums,
// 256 KiB at [4096, 512]) allocated at its first call, and where it lands moves that kernel by
// ~10%: the copy warmed up first read faster in either slot (session 27: b/a 0.87x with X
// first, 1.07x with Y first, the ratio-4 backward's code the same on both sides). Compare such
// rows in both orders (idle_ab.sh).
//   ab X Y fwd|bwd S HD RATIO THREADS ROUNDS [label]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {
using Fwd = void(const float*, const float*, const float*, float*, int64_t, int64_t, int, core::ThreadPool*);
using Bwd = void(const float*, const float*, const float*, const float*, float*, float*, float*, int64_t,
                 int64_t, int, core::ThreadPool*);
Fwd kv_compress_forward, kvA_forward, kvB_forward;
Bwd kv_compress_backward, kvA_backward, kvB_backward;
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
static bool pick(const char* name, kernels::Fwd** f, kernels::Bwd** b) {
  const std::string s = name;
  if (s == "main") { *f = kernels::kv_compress_forward; *b = kernels::kv_compress_backward; return true; }
  if (s == "a") { *f = kernels::kvA_forward; *b = kernels::kvA_backward; return true; }
  if (s == "b") { *f = kernels::kvB_forward; *b = kernels::kvB_backward; return true; }
  std::fprintf(stderr, "ab: variant must be main, a or b, not '%s'\n", name);
  return false;
}

int main(int argc, char** argv) {
  if (argc < 9) { std::fprintf(stderr, "usage: ab X Y fwd|bwd S HD RATIO THREADS ROUNDS [label]\n"); return 2; }
  kernels::Fwd *fx, *fy;
  kernels::Bwd *bx, *by;
  if (!pick(argv[1], &fx, &bx) || !pick(argv[2], &fy, &by)) return 2;
  const bool fwd = std::strcmp(argv[3], "fwd") == 0;
  const int64_t s = atoll(argv[4]), hd = atoll(argv[5]);
  const int ratio = atoi(argv[6]), threads = atoi(argv[7]), rounds = atoi(argv[8]);
  const char* label = argc > 9 ? argv[9] : "";
  const bool wall = getenv("AB_WALL") != nullptr;
  const int64_t C = ratio == 4 ? 2 * hd : hd, n = s / ratio;
  core::ThreadPool pool(threads);
  auto kt = arr(s * C, -1, 1, 1), zt = arr(s * C, -2, 2, 2), ape = arr(ratio * C, 0, 0.5f, 3), dk = arr(n * hd, -1, 1, 4);
  struct Out {
    std::unique_ptr<float[], core::AlignedDeleter> k, dkt, dzt, dape;
  };
  Out ox{core::aligned_array<float>(n * hd), core::aligned_array<float>(s * C), core::aligned_array<float>(s * C),
         core::aligned_array<float>(ratio * C)};
  Out oy{core::aligned_array<float>(n * hd), core::aligned_array<float>(s * C), core::aligned_array<float>(s * C),
         core::aligned_array<float>(ratio * C)};
  auto run = [&](kernels::Fwd* f, kernels::Bwd* b, Out& o) {
    if (fwd) f(kt.get(), zt.get(), ape.get(), o.k.get(), s, hd, ratio, &pool);
    else b(kt.get(), zt.get(), ape.get(), dk.get(), o.dkt.get(), o.dzt.get(), o.dape.get(), s, hd, ratio, &pool);
  };
  auto X = [&] { run(fx, bx, ox); };
  auto Y = [&] { run(fy, by, oy); };
  auto same_bytes = [&] {
    return fwd ? std::memcmp(ox.k.get(), oy.k.get(), n * hd * 4) == 0
               : std::memcmp(ox.dkt.get(), oy.dkt.get(), s * C * 4) == 0 &&
                     std::memcmp(ox.dzt.get(), oy.dzt.get(), s * C * 4) == 0 &&
                     std::memcmp(ox.dape.get(), oy.dape.get(), ratio * C * 4) == 0;
  };
  if (getenv("AB_WARM_YX")) { Y(); X(); } else { X(); Y(); }
  bool same = same_bytes();
  std::vector<double> tx, ty, ratios;
  int faster = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> a, b;
    auto time7 = [&](auto f, std::vector<double>& out) {
      for (int c = 0; c < 7; ++c) { double t0 = now(wall); f(); out.push_back(now(wall) - t0); }
    };
    if (r % 2 == 0) { time7(X, a); time7(Y, b); } else { time7(Y, b); time7(X, a); }
    const double ma = median(a), mb = median(b);
    tx.push_back(ma); ty.push_back(mb); ratios.push_back(ma / mb);
    faster += mb < ma;
  }
  X(); Y();
  same = same && same_bytes();
  const double bytes = fwd ? 4.0 * (2 * s * C + ratio * C + n * hd) : 4.0 * (4 * s * C + 2 * ratio * C + n * hd);
  std::sort(ratios.begin(), ratios.end());
  std::printf("%s %s %s [%lld,%lld] r%d t%d: %s %.3f ms (%.1f GB/s) %s %.3f ms (%.1f GB/s); %s/%s speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              label, wall ? "wall" : "cpu", fwd ? "fwd" : "bwd", (long long)s, (long long)hd, ratio, threads,
              argv[1], 1e3 * median(tx), bytes / median(tx) / 1e9, argv[2], 1e3 * median(ty), bytes / median(ty) / 1e9,
              argv[2], argv[1], median(ratios), faster, rounds, ratios.front(), ratios.back(), same ? "same" : "DIFFER");
  return same ? 0 : 1;
}
