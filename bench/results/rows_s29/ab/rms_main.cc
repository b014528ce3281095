// One-process A/B of two builds of rmsnorm.cc: same bytes, then time. ab MODE fwd|bwd fp32|bf16 ROUNDS
#include <time.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/core/arena.h"
namespace trex::kernels {
#define DECL(s) \
template <class T> void rmsnorm_forward_##s(const T*, const float*, T*, int64_t, int64_t, float, core::ThreadPool*); \
template <class T> void rmsnorm_backward_##s(const T*, const float*, const T*, T*, float*, int64_t, int64_t, float, core::ThreadPool*);
DECL(old) DECL(new)
}
using namespace trex;
static double now(bool cpu) { timespec ts; clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
template <class T> T cv(float f) { if constexpr (std::is_same_v<T, float>) return f; else return core::to_bf16(f); }
template <class T> struct Buf { std::unique_ptr<T[], core::AlignedDeleter> p; explicit Buf(int64_t n) : p(core::aligned_array<T>(n)) {} T* get() { return p.get(); } };
template <class T> int run(bool full, bool bwd, int rounds) {
  const int64_t rows = full ? 4096 : (std::getenv("AB_ROWS") ? std::atoi(std::getenv("AB_ROWS")) : 8), cols = std::getenv("AB_COLS") ? std::atoi(std::getenv("AB_COLS")) : 4096, n = rows * cols;
  core::ThreadPool pool(full ? 2 : 1);
  Buf<T> x(n), dy(n), o1(n), o2(n);
  std::mt19937 rng(7); std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i) { x.get()[i] = cv<T>(2.f * nd(rng)); dy.get()[i] = cv<T>(nd(rng) * ((i / 4096) % 3 == 1 && i % 7 == 0 ? 1e-38f : 1.f)); }
  if (std::getenv("AB_TINYROW")) for (int64_t i = cols; i < 2 * cols && i < n; ++i) dy.get()[i] = cv<T>(1e-39f * nd(rng));
  const bool wd = std::getenv("AB_W") != nullptr;
  std::vector<float> w(cols), dw1(cols), dw2(cols);
  for (auto& v : w) v = 1.f + 0.3f * nd(rng);
  auto call = [&](bool nw) {
    T* o = nw ? o2.get() : o1.get();
    const float* wp = wd ? w.data() : nullptr;
    if (bwd) { if (nw) kernels::rmsnorm_backward_new(x.get(), wp, dy.get(), o, wd ? dw2.data() : nullptr, rows, cols, 1e-6f, &pool); else kernels::rmsnorm_backward_old(x.get(), wp, dy.get(), o, wd ? dw1.data() : nullptr, rows, cols, 1e-6f, &pool); }
    else { if (nw) kernels::rmsnorm_forward_new(x.get(), nullptr, o, rows, cols, 1e-6f, &pool); else kernels::rmsnorm_forward_old(x.get(), nullptr, o, rows, cols, 1e-6f, &pool); }
  };
  call(false); call(true);
  int64_t den = 0;
  for (int64_t i = 0; i < n; ++i) {
    float f; if constexpr (std::is_same_v<T, float>) f = o2.get()[i]; else f = core::to_float(o2.get()[i]);
    den += std::fpclassify(f) == FP_SUBNORMAL;
  }
  std::printf("denormal outputs: %ld\n", long(den));
  const bool same = std::memcmp(o1.get(), o2.get(), n * sizeof(T)) == 0 && std::memcmp(dw1.data(), dw2.data(), cols * 4) == 0;
  std::printf("same bytes: %s\n", same ? "yes" : "NO");
  if (!same && !std::getenv("AB_IGNORE")) return 1;
  const int calls = full ? 60 : 400;
  std::vector<double> to, tn, ratio;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      bool nw = (k == 1) ^ (r % 2 == 1);
      std::vector<double> v;
      for (int c = 0; c < calls; ++c) { double a = now(!full); call(nw); v.push_back(now(!full) - a); }
      std::sort(v.begin(), v.end()); t[nw] = v[v.size() / 2];
    }
    to.push_back(t[0]); tn.push_back(t[1]); ratio.push_back(t[0] / t[1]);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const double bytes = (bwd ? 3.0 : 2.0) * n * sizeof(T);
  std::vector<double> rs = ratio; std::sort(rs.begin(), rs.end());
  int faster = 0; for (double q : ratio) faster += q > 1;
  std::printf("old %.4f ms (%.1f GB/s = %.0f%% of 51.6)  new %.4f ms (%.1f GB/s = %.0f%%)  old/new median %.3f range %.3f-%.3f, new faster in %d of %d\n",
    1e3 * med(to), bytes / med(to) / 1e9, 100 * bytes / med(to) / 51.6e9, 1e3 * med(tn), bytes / med(tn) / 1e9, 100 * bytes / med(tn) / 51.6e9,
    med(ratio), rs.front(), rs.back(), faster, rounds);
  return 0;
}
int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "ab: usage: ab cache|full fwd|bwd fp32|bf16 ROUNDS\n"); return 2; }
  const std::string m = argv[1], k = argv[2], t = argv[3]; const int rounds = std::atoi(argv[4]);
  return t == "bf16" ? run<core::bf16>(m == "full", k == "bwd", rounds) : run<float>(m == "full", k == "bwd", rounds);
}
