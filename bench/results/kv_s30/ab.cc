// One-process A/B of the kv_compress kernels (session 28; session 29 also compares the kept
// statistics where both sides keep them). Variants:
//   base   the session start's kv_compressor.cc ($BASE), entry points renamed kvA_* (abbuild.sh)
//   bstats with a BASE that has the statistics (AB_BASE_STATS, abbuild.sh: BASE_STATS=1): its
//          backward from them (and its forward keeping them), renamed kvA_*: two versions of
//          the new path in one process
//   plain  this build's kv_compress_backward / kv_compress_forward
//   stats  this build's kv_compress_backward_from_stats / kv_compress_forward_keeping_stats
// (the statistics come from one kv_compress_forward_keeping_stats call before the rounds).
// Alternating rounds, 7 calls a side per round (median), CPU time of the process (AB_WALL=1:
// wall); prints each side's median ms and GB/s (minimum traffic, as kernel_triad_bench counts
// it), the median of per-round speed ratios (Y over X: > 1 when Y is faster), how many rounds Y
// was faster, the range, and whether every output byte matched.
//   ab X Y fwd|bwd S HD RATIO THREADS ROUNDS [label]
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
#include "trex/kernels/kv_compressor.h"

namespace trex::kernels {
void kvA_forward(const float*, const float*, const float*, float*, int64_t, int64_t, int, core::ThreadPool*);
void kvA_backward(const float*, const float*, const float*, const float*, float*, float*, float*, int64_t,
                  int64_t, int, core::ThreadPool*);
#ifdef AB_BASE_STATS
void kvA_fstats(const float*, const float*, const float*, float*, float*, int64_t, int64_t, int, core::ThreadPool*);
void kvA_bstats(const float*, const float*, const float*, const float*, const float*, float*, float*, float*,
                int64_t, int64_t, int, core::ThreadPool*);
#endif
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
  if (argc < 9) { std::fprintf(stderr, "usage: ab X Y fwd|bwd S HD RATIO THREADS ROUNDS [label]\n"); return 2; }
  for (int v = 1; v <= 2; ++v) {
    const std::string s = argv[v];
#ifdef AB_BASE_STATS
    const bool bstats = s == "bstats";
#else
    const bool bstats = false;
#endif
    if (s != "base" && s != "plain" && s != "stats" && !bstats) {
      std::fprintf(stderr, "ab: variant must be base, plain, stats (or bstats), not '%s'\n", argv[v]);
      return 2;
    }
  }
  const std::string vx = argv[1], vy = argv[2];
  const bool fwd = std::strcmp(argv[3], "fwd") == 0;
  const int64_t s = atoll(argv[4]), hd = atoll(argv[5]);
  const int ratio = atoi(argv[6]), threads = atoi(argv[7]), rounds = atoi(argv[8]);
  const char* label = argc > 9 ? argv[9] : "";
  const bool wall = getenv("AB_WALL") != nullptr;
  const int64_t C = kernels::compressor_width(ratio, hd), n = kernels::compressor_entries(s, ratio);
  const int64_t sw = kernels::compressor_stats_width(ratio, hd);
  core::ThreadPool pool(threads);
  auto kt = arr(s * C, -1, 1, 1), zt = arr(s * C, -2, 2, 2), ape = arr(ratio * C, 0, 0.5f, 3), dk = arr(n * hd, -1, 1, 4);
  auto stats = core::aligned_array<float>(std::max<int64_t>(1, n * sw));
  {
    auto k = core::aligned_array<float>(std::max<int64_t>(1, n * hd));
    kernels::kv_compress_forward_keeping_stats(kt.get(), zt.get(), ape.get(), k.get(), stats.get(), s, hd, ratio, &pool);
  }
  struct Out {
    std::unique_ptr<float[], core::AlignedDeleter> k, st, dkt, dzt, dape;
  };
  auto out = [&] {
    return Out{core::aligned_array<float>(n * hd), core::aligned_array<float>(std::max<int64_t>(1, n * sw)),
               core::aligned_array<float>(s * C), core::aligned_array<float>(s * C), core::aligned_array<float>(ratio * C)};
  };
  Out ox = out(), oy = out();
  auto run = [&](const std::string& v, Out& o) {
    if (fwd) {
      if (v == "base") kernels::kvA_forward(kt.get(), zt.get(), ape.get(), o.k.get(), s, hd, ratio, &pool);
#ifdef AB_BASE_STATS
      else if (v == "bstats") kernels::kvA_fstats(kt.get(), zt.get(), ape.get(), o.k.get(), o.st.get(), s, hd, ratio, &pool);
#endif
      else if (v == "plain") kernels::kv_compress_forward(kt.get(), zt.get(), ape.get(), o.k.get(), s, hd, ratio, &pool);
      else kernels::kv_compress_forward_keeping_stats(kt.get(), zt.get(), ape.get(), o.k.get(), o.st.get(), s, hd, ratio, &pool);
    } else {
      if (v == "base") kernels::kvA_backward(kt.get(), zt.get(), ape.get(), dk.get(), o.dkt.get(), o.dzt.get(), o.dape.get(), s, hd, ratio, &pool);
#ifdef AB_BASE_STATS
      else if (v == "bstats") kernels::kvA_bstats(kt.get(), zt.get(), ape.get(), stats.get(), dk.get(), o.dkt.get(), o.dzt.get(), o.dape.get(), s, hd, ratio, &pool);
#endif
      else if (v == "plain") kernels::kv_compress_backward(kt.get(), zt.get(), ape.get(), dk.get(), o.dkt.get(), o.dzt.get(), o.dape.get(), s, hd, ratio, &pool);
      else kernels::kv_compress_backward_from_stats(kt.get(), zt.get(), ape.get(), stats.get(), dk.get(), o.dkt.get(), o.dzt.get(), o.dape.get(), s, hd, ratio, &pool);
    }
  };
  auto X = [&] { run(vx, ox); };
  auto Y = [&] { run(vy, oy); };
  auto same_bytes = [&] {
    // the forward's statistics too, where both sides keep them (stats, bstats)
    const bool both_stats = (vx == "stats" || vx == "bstats") && (vy == "stats" || vy == "bstats");
    return fwd ? std::memcmp(ox.k.get(), oy.k.get(), n * hd * 4) == 0 &&
                     (!both_stats || std::memcmp(ox.st.get(), oy.st.get(), n * sw * 4) == 0)
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
    auto time7 = [&](auto f, std::vector<double>& o) {
      for (int c = 0; c < 7; ++c) { double t0 = now(wall); f(); o.push_back(now(wall) - t0); }
    };
    if (r % 2 == 0) { time7(X, a); time7(Y, b); } else { time7(Y, b); time7(X, a); }
    const double ma = median(a), mb = median(b);
    tx.push_back(ma); ty.push_back(mb); ratios.push_back(ma / mb);
    faster += mb < ma;
  }
  X(); Y();
  same = same && same_bytes();
  // kernel_triad_bench's minimum traffic (the backward's statistics not counted: 2.3% at ratio 128).
  const double bytes = fwd ? 4.0 * (2 * s * C + ratio * C + n * hd) : 4.0 * (4 * s * C + 2 * ratio * C + n * hd);
  std::sort(ratios.begin(), ratios.end());
  std::printf("%s %s %s [%lld,%lld] r%d t%d: %s %.3f ms (%.1f GB/s) %s %.3f ms (%.1f GB/s); %s/%s speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              label, wall ? "wall" : "cpu", fwd ? "fwd" : "bwd", (long long)s, (long long)hd, ratio, threads,
              argv[1], 1e3 * median(tx), bytes / median(tx) / 1e9, argv[2], 1e3 * median(ty), bytes / median(ty) / 1e9,
              argv[2], argv[1], median(ratios), faster, rounds, ratios.front(), ratios.back(), same ? "same" : "DIFFER");
  return same ? 0 : 1;
}
