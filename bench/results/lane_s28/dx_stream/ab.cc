// One-process A/B for review MEDIUM 1 on 5f3eb78: does streaming the mHC head backward's dX (fp32,
// overwrite, 64-byte aligned: the model's gA, 2048 x 4 x 512 = 16 MiB) cost its next reader more
// than the head saves? Each round runs, for two dX buffers in alternating order, the head backward
// (kOverwrite, the forward's proj given, as transformer.cc calls it) and then a reader that reads
// every float of dX once (8 independent sums: the memory traffic of the next block's read of it).
// "stream": dX 64-byte aligned (streaming stores); "plain": dX one float past it (normal stores,
// the same kernel path otherwise). Wall time of the pair and of each part, medians over rounds.
//   g++ -O2 -march=native -std=c++20 -I src ab.cc build/libtrex_kernels.a build/libtrex_core.a -lpthread
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/kernels/mhc.h"

using namespace trex;
using Clock = std::chrono::steady_clock;

static double now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

static double reader(const float* x, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += x[i + l];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
  const bool same = std::getenv("AB_SAME") != nullptr;  // control: both sides streamed
  kernels::MhcShape sh;
  sh.tokens = 2048; sh.d = 512; sh.n = 4;
  const int64_t T = sh.tokens, n = sh.n, nd = n * sh.d;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd01(0.f, 1.f);
  auto vec = [&](int64_t k, float sc) { std::vector<float> v(static_cast<size_t>(k)); for (float& x : v) x = sc * nd01(rng); return v; };
  std::vector<float> X = vec(T * nd, 1.f), phi = vec(n * nd, 1.7f / std::sqrt(float(nd))), b = vec(n, 0.5f), dy = vec(T * sh.d, 1.f);
  std::vector<float> y(size_t(T * sh.d)), w(size_t(T * n)), proj(size_t(kernels::mhc_head_proj_floats(sh)));
  std::vector<float> dphi(size_t(n * nd)), db(static_cast<size_t>(n)), ds(1), ws(size_t(kernels::mhc_head_backward_workspace(sh)));
  core::ThreadPool pool(2);
  kernels::mhc_head_forward(X.data(), phi.data(), b.data(), 1.3f, y.data(), w.data(), sh, &pool, proj.data());
  float* base[2];
  for (int k = 0; k < 2; ++k) base[k] = static_cast<float*>(std::aligned_alloc(64, size_t(T * nd + 64) * sizeof(float)));
  float* dX[2] = {base[0], same ? base[1] : base[1] + 1};  // [0] streams; [1] one float past (normal stores)
  std::vector<double> pair[2], head[2], read[2];
  double sink = 0;
  for (int r = 0; r < rounds + 2; ++r)
    for (int j = 0; j < 2; ++j) {
      const int k = (r % 2) ? 1 - j : j;
      // Something else through the caches first (the step's other work): 48 MiB read.
      static std::vector<float> evict(size_t(12) << 20, 1.f);
      sink += reader(evict.data(), int64_t(evict.size()));
      const double t0 = now();
      kernels::mhc_head_backward(X.data(), phi.data(), b.data(), 1.3f, dy.data(), dX[k], dphi.data(), db.data(), ds.data(),
                                 sh, ws.data(), &pool, proj.data(), kernels::MhcGradInto::kOverwrite);
      const double t1 = now();
      sink += reader(dX[k], T * nd);
      const double t2 = now();
      if (r < 2) continue;  // warm-up
      pair[k].push_back(t2 - t0); head[k].push_back(t1 - t0); read[k].push_back(t2 - t1);
    }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  int faster = 0;
  for (size_t i = 0; i < pair[0].size(); ++i) faster += pair[0][i] < pair[1][i];
  std::printf("%s, %d rounds: pair stream %.3f ms plain %.3f ms (plain/stream %.3f, stream faster in %d); "
              "head %.3f / %.3f ms; reader %.3f / %.3f ms  (sink %g)\n",
              same ? "control (both aligned)" : "stream vs plain", rounds, 1e3 * med(pair[0]), 1e3 * med(pair[1]),
              med(pair[1]) / med(pair[0]), faster, 1e3 * med(head[0]), 1e3 * med(head[1]), 1e3 * med(read[0]),
              1e3 * med(read[1]), sink);
}
