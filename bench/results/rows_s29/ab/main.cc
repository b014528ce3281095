// One-process A/B of two builds of swiglu.cc (tu_old.cc, tu_new.cc): same bytes, then time.
//   ab MODE KERNEL DTYPE ROUNDS   MODE: cache (1 thread, 8 x 4096, thread CPU time per call)
//                                       full  (2 threads, 4096 x 4096, wall time per call)
#include <time.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/core/arena.h"
namespace trex::kernels {
#define DECL(s) \
template <class T> void swiglu_forward_##s(const T*, const T*, const float*, T*, int64_t, int64_t, float, core::ThreadPool*); \
template <class T> void swiglu_backward_##s(const T*, const T*, const float*, const T*, T*, T*, float*, int64_t, int64_t, float, core::ThreadPool*);
DECL(old) DECL(new)
}
using namespace trex;
static double now(bool cpu) { timespec ts; clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
template <class T> T cv(float f) { if constexpr (std::is_same_v<T, float>) return f; else return core::to_bf16(f); }
template <class T> struct Buf { std::unique_ptr<T[], core::AlignedDeleter> p; explicit Buf(int64_t n) : p(core::aligned_array<T>(n)) {} T* get() { return p.get(); } };
template <class T> int run(bool full, bool bwd, int rounds, bool special) {
  const int64_t rows = full ? 4096 : (std::getenv("AB_ROWS") ? std::atoi(std::getenv("AB_ROWS")) : 8), cols = std::getenv("AB_COLS") ? std::atoi(std::getenv("AB_COLS")) : 4096, n = rows * cols;
  core::ThreadPool pool(full ? 2 : 1);
  Buf<T> g(n), u(n), dh(n), o1(n), o2(n), p1(n), p2(n);
  std::vector<float> w(rows), dw1(rows), dw2(rows);
  std::mt19937 rng(7); std::normal_distribution<float> nd(0.f, 1.f);
  const float sp[] = {10.f, -10.f, 0.f, -0.f, 1e-39f, -3e-40f, INFINITY, -INFINITY, NAN, -100.f, -90.f, -87.4f, 1e-30f, 5e-20f};
  for (int64_t i = 0; i < n; ++i) {
    g.get()[i] = cv<T>(6.f * nd(rng)); u.get()[i] = cv<T>(6.f * nd(rng)); dh.get()[i] = cv<T>(nd(rng) * (i % 977 == 0 ? 1e-35f : 1.f));
    if (special && i % 101 == 0) g.get()[i] = cv<T>(sp[(i / 101) % 14]);
    if (special && i % 103 == 0) u.get()[i] = cv<T>(sp[(i / 103) % 14]);
    if (special && i % 107 == 0) dh.get()[i] = cv<T>(sp[(i / 107) % 14]);
  }
  for (int64_t r = 0; r < rows; ++r) w[r] = r % 5 == 0 ? 1.f : (r % 5 == 1 ? 3.f : 0.5f * nd(rng));
  auto call = [&](bool nw) {
    if (bwd) {
      if (nw) kernels::swiglu_backward_new(g.get(), u.get(), w.data(), dh.get(), o2.get(), p2.get(), dw2.data(), rows, cols, 10.f, &pool);
      else kernels::swiglu_backward_old(g.get(), u.get(), w.data(), dh.get(), o1.get(), p1.get(), dw1.data(), rows, cols, 10.f, &pool);
    } else {
      if (nw) kernels::swiglu_forward_new(g.get(), u.get(), w.data(), o2.get(), rows, cols, 10.f, &pool);
      else kernels::swiglu_forward_old(g.get(), u.get(), w.data(), o1.get(), rows, cols, 10.f, &pool);
    }
  };
  call(false); call(true);
  bool same = std::memcmp(o1.get(), o2.get(), n * sizeof(T)) == 0;
  if (bwd) same = same && std::memcmp(p1.get(), p2.get(), n * sizeof(T)) == 0 && std::memcmp(dw1.data(), dw2.data(), rows * 4) == 0;
  std::printf("same bytes: %s\n", same ? "yes" : "NO");
  if (!same && !std::getenv("AB_IGNORE")) return 1;
  if (special) return 0;
  const int calls = full ? 60 : int(std::max<int64_t>(50, 400 * 32768 / n));
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
  const double bytes = (bwd ? 5.0 : 3.0) * n * sizeof(T);
  std::vector<double> rs = ratio; std::sort(rs.begin(), rs.end());
  int faster = 0; for (double x : ratio) faster += x > 1;
  std::printf("old %.4f ms (%.1f GB/s = %.0f%% of 51.6)  new %.4f ms (%.1f GB/s = %.0f%%)  old/new median %.3f range %.3f-%.3f, new faster in %d of %d\n",
    1e3 * med(to), bytes / med(to) / 1e9, 100 * bytes / med(to) / 51.6e9, 1e3 * med(tn), bytes / med(tn) / 1e9, 100 * bytes / med(tn) / 51.6e9,
    med(ratio), rs.front(), rs.back(), faster, rounds);
  return 0;
}
int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "ab: usage: ab cache|full|special fwd|bwd fp32|bf16 ROUNDS\n"); return 2; }
  const std::string m = argv[1], k = argv[2], t = argv[3]; const int rounds = std::atoi(argv[4]);
  const bool full = m == "full", special = m == "special", bwd = k == "bwd";
  if (special) { int a = t == "bf16" ? run<core::bf16>(false, bwd, 0, true) : run<float>(false, bwd, 0, true); int b = t == "bf16" ? run<core::bf16>(true, bwd, 0, true) : run<float>(true, bwd, 0, true); return a | b; }
  return t == "bf16" ? run<core::bf16>(full, bwd, rounds, false) : run<float>(full, bwd, rounds, false);
}
