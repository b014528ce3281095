// scratch (not in the repo): one-process A/B of a row kernel, A = main's library (mainlib/, 23c9aaf),
// B = the worktree's .cc compiled with renamed entry points (abbuild.sh). Same inputs, alternating
// A/B per round (order swapped each round), each side's time = median of CALLS calls, by the calling
// thread's CPU time at 1 thread, by process CPU time at more (AB_WALL=1: wall time). Prints per-round
// ratio A/B and the median, and whether the outputs were byte-identical.
//   ab KERNEL DTYPE THREADS ROUNDS CALLS D1 D2 [D3]
//   kernels: rope (tokens heads head_dim; rd 64), ce (rows vocab; fp32), rmsfwd / rmsbwd (rows dim, weighted),
//            swfwd / swbwd (rows cols)
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/kernels/swiglu.h"
#include "trex/kernels/tuning.h"

namespace trex::kernels {
template <class T>
void rope_apply_new(const T*, T*, const int64_t*, int64_t, int64_t, int64_t, const RopeTable&, int,
                    core::ThreadPool*);
template <class T>
void cross_entropy_forward_backward_new(const T*, const int32_t*, float*, T*, int64_t, int64_t, float,
                                        core::ThreadPool*);
template <class T>
void rmsnorm_forward_new(const T*, const float*, T*, int64_t, int64_t, float, core::ThreadPool*);
template <class T>
void rmsnorm_backward_new(const T*, const float*, const T*, T*, float*, int64_t, int64_t, float,
                          core::ThreadPool*);
template <class T>
void swiglu_forward_new(const T*, const T*, const float*, T*, int64_t, int64_t, float, core::ThreadPool*);
template <class T>
void swiglu_backward_new(const T*, const T*, const float*, const T*, T*, T*, float*, int64_t, int64_t,
                         float, core::ThreadPool*);
}  // namespace trex::kernels

using namespace trex;
using core::bf16;

static double now(bool thread_cpu) {
  timespec t;
  static const bool wall = std::getenv("AB_WALL") != nullptr;
  clock_gettime(wall ? CLOCK_MONOTONIC : thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

template <class T>
static T* buf(int64_t n) {
  return core::aligned_array<T>(size_t(n)).release();
}
template <class T>
static void fill(T* p, int64_t n, uint32_t seed, float scale, bool heavy) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    float x = nd(rng);
    if (heavy) x = x / std::sqrt(std::max(ud(rng), 1e-3f));
    x *= scale;
    if constexpr (std::is_same_v<T, float>) p[i] = x; else p[i] = core::to_bf16(x);
  }
}

struct Out {
  void* p;
  size_t bytes;
};

template <class T>
static int run(const std::string& k, int threads, int rounds, int calls, std::vector<int64_t> d) {
  core::ThreadPool pool(threads);
  std::function<void()> fa, fb;
  std::vector<Out> oa, ob;
  const float eps = 1e-6f, L = 10.f;
  if (k == "rope") {
    const int64_t n = d[0] * d[1] * d[2];
    T* x = buf<T>(n);
    fill(x, n, 1, 1.f, true);
    T *ya = buf<T>(n), *yb = ya;
    kernels::RopeFreqConfig fc;
    fc.rope_dim = 64, fc.base = 160000, fc.yarn = true;
    auto* table = new kernels::RopeTable(kernels::rope_table(kernels::rope_frequencies(fc), d[0]));
    auto* pos = new int64_t[size_t(d[0])];
    std::iota(pos, pos + d[0], 0);
    fa = [=, &pool] { kernels::rope_apply(x, ya, pos, d[0], d[1], d[2], *table, 1, &pool); };
    fb = [=, &pool] { kernels::rope_apply_new(x, yb, pos, d[0], d[1], d[2], *table, 1, &pool); };
    oa = {{ya, n * sizeof(T)}}, ob = {{yb, n * sizeof(T)}};
  } else if (k == "ce") {
    const int64_t n = d[0] * d[1];
    T* x = buf<T>(n);
    fill(x, n, 2, 4.f, false);
    auto* tg = new int32_t[size_t(d[0])];
    for (int64_t r = 0; r < d[0]; ++r) tg[r] = r % 5 == 4 ? -1 : int32_t((r * 7919) % d[1]);
    T *ga = buf<T>(n), *gb = ga;
    float *la = buf<float>(d[0]), *lb = la;
    const float sc = 1.f / float(d[0]);
    fa = [=, &pool] { kernels::cross_entropy_forward_backward(x, tg, la, ga, d[0], d[1], sc, &pool); };
    fb = [=, &pool] { kernels::cross_entropy_forward_backward_new(x, tg, lb, gb, d[0], d[1], sc, &pool); };
    oa = {{ga, n * sizeof(T)}, {la, d[0] * 4ul}}, ob = {{gb, n * sizeof(T)}, {lb, d[0] * 4ul}};
  } else if (k == "rmsfwd" || k == "rmsbwd") {
    const int64_t n = d[0] * d[1];
    T *x = buf<T>(n), *dy = buf<T>(n);
    fill(x, n, 3, 1.f, true);
    fill(dy, n, 4, 1.f, false);
    float* w = buf<float>(d[1]);
    fill(w, d[1], 5, 1.f, false);
    T *ya = buf<T>(n), *yb = ya;
    float *dwa = buf<float>(d[1]), *dwb = dwa;
    if (k == "rmsfwd") {
      fa = [=, &pool] { kernels::rmsnorm_forward(x, w, ya, d[0], d[1], eps, &pool); };
      fb = [=, &pool] { kernels::rmsnorm_forward_new(x, w, yb, d[0], d[1], eps, &pool); };
      oa = {{ya, n * sizeof(T)}}, ob = {{yb, n * sizeof(T)}};
    } else {
      fa = [=, &pool] { kernels::rmsnorm_backward(x, w, dy, ya, dwa, d[0], d[1], eps, &pool); };
      fb = [=, &pool] { kernels::rmsnorm_backward_new(x, w, dy, yb, dwb, d[0], d[1], eps, &pool); };
      oa = {{ya, n * sizeof(T)}, {dwa, d[1] * 4ul}}, ob = {{yb, n * sizeof(T)}, {dwb, d[1] * 4ul}};
    }
  } else if (k == "swfwd" || k == "swbwd") {
    const int64_t n = d[0] * d[1];
    T *g = buf<T>(n), *u = buf<T>(n), *dh = buf<T>(n);
    fill(g, n, 6, 4.f, true);
    fill(u, n, 7, 4.f, false);
    fill(dh, n, 8, 1.f, false);
    float* w = buf<float>(d[0]);
    for (int64_t r = 0; r < d[0]; ++r) w[r] = 0.7f;
    T *a1 = buf<T>(n), *a2 = buf<T>(n), *b1 = a1, *b2 = a2;
    float *dwa = buf<float>(d[0]), *dwb = dwa;
    if (k == "swfwd") {
      fa = [=, &pool] { kernels::swiglu_forward(g, u, w, a1, d[0], d[1], L, &pool); };
      fb = [=, &pool] { kernels::swiglu_forward_new(g, u, w, b1, d[0], d[1], L, &pool); };
      oa = {{a1, n * sizeof(T)}}, ob = {{b1, n * sizeof(T)}};
    } else {
      fa = [=, &pool] { kernels::swiglu_backward(g, u, w, dh, a1, a2, dwa, d[0], d[1], L, &pool); };
      fb = [=, &pool] { kernels::swiglu_backward_new(g, u, w, dh, b1, b2, dwb, d[0], d[1], L, &pool); };
      oa = {{a1, n * sizeof(T)}, {a2, n * sizeof(T)}, {dwa, d[0] * 4ul}};
      ob = {{b1, n * sizeof(T)}, {b2, n * sizeof(T)}, {dwb, d[0] * 4ul}};
    }
  } else {
    std::fprintf(stderr, "unknown kernel %s\n", k.c_str());
    return 2;
  }
  const bool tc = threads == 1;
  auto time = [&](std::function<void()>& f) {
    std::vector<double> t;
    for (int c = 0; c < calls; ++c) {
      const double t0 = now(tc);
      f();
      t.push_back(now(tc) - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  // AB_TUNE=FILE: B is A's own function under that tuning file (A untuned): a same-code A/B of a tuning.
  std::shared_ptr<const kernels::Tuning> tune;
  if (const char* tf = std::getenv("AB_TUNE")) {
    tune = std::make_shared<const kernels::Tuning>(kernels::Tuning::load(tf));
    fb = fa;
  }
  auto fa0 = fa, fb0 = fb;
  fa = [&] { if (tune) kernels::set_active_tuning(nullptr); fa0(); };
  fb = [&] { if (tune) kernels::set_active_tuning(tune); fb0(); };
  // AB_SAME=1: B is A (a control of the driver's offset).
  if (std::getenv("AB_SAME")) fb = fa;
  fa(), fb();  // warm-up (first touch)
  std::vector<double> ta, tb, ratio;
  for (int r = 0; r < rounds; ++r) {
    double a, b;
    if (r % 2 == 0) a = time(fa), b = time(fb);
    else b = time(fb), a = time(fa);
    ta.push_back(a), tb.push_back(b), ratio.push_back(a / b);
  }
  // B writes A's output buffers (the same pages: separate buffers gave a per-process bias of
  // +-15-30% from memory with identical code), so the bytes are compared from a copy of A's.
  bool same = true;
  fa();
  std::vector<std::vector<char>> snap;
  for (auto& o : oa) snap.emplace_back(static_cast<char*>(o.p), static_cast<char*>(o.p) + o.bytes);
  fb();
  for (size_t i = 0; i < ob.size(); ++i) same = same && std::memcmp(snap[i].data(), ob[i].p, ob[i].bytes) == 0;
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  int wins = 0;
  for (double x : ratio) wins += x > 1;
  std::printf("%s %s thr %d: A %.3f ms B %.3f ms (medians); A/B per-round median %.3f (min %.3f max %.3f), B faster %d/%d; outputs %s; rounds:",
              k.c_str(), std::is_same_v<T, float> ? "fp32" : "bf16", threads, med(ta) * 1e3, med(tb) * 1e3,
              med(ratio), *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
              wins, rounds, same ? "SAME bytes" : "DIFFER");
  for (double x : ratio) std::printf(" %.3f", x);
  std::printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "ab KERNEL DTYPE THREADS ROUNDS CALLS D1 D2 [D3]\n");
    return 2;
  }
  std::string k = argv[1], dt = argv[2];
  int threads = atoi(argv[3]), rounds = atoi(argv[4]), calls = atoi(argv[5]);
  std::vector<int64_t> d;
  for (int i = 6; i < argc; ++i) d.push_back(atoll(argv[i]));
  return dt == "bf16" ? run<bf16>(k, threads, rounds, calls, d) : run<float>(k, threads, rounds, calls, d);
}
