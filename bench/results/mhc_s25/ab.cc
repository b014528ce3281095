// One-process A/B of the mHC head/post kernels: A = the library's (main) kernels, B = the
// worktree's mhc*.cc compiled with renamed entry points (abbuild.sh). Alternating rounds, each
// round the median of 7 calls, process CPU time; checks the outputs' bytes.
// Usage: ab KERNEL f32|bf16 TOKENS THREADS ROUNDS   (KERNEL: head_fwd head_bwd post_fwd post_bwd)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/mhc.h"
namespace trex::kernels {
template <class T>
void mhc_head_backward_new(const T*, const float*, const float*, float, const T*, T*, float*, float*,
                           float*, const MhcShape&, float*, core::ThreadPool*);
template <class T>
void mhc_head_forward_new(const T*, const float*, const float*, float, T*, float*, const MhcShape&,
                          core::ThreadPool*);
template <class T>
void mhc_post_forward_new(const T*, const T*, const float*, const float*, T*, const MhcShape&,
                          core::ThreadPool*);
template <class T>
void mhc_post_backward_new(const T*, const T*, const T*, const float*, const float*, T*, T*, float*,
                           float*, const MhcShape&, core::ThreadPool*);
}  // namespace trex::kernels
using namespace trex;
// 64-byte aligned storage, as the suite's buffers (the kernels' streaming-store choice depends on it).
template <class T> struct Al { using value_type = T; Al() = default; template <class U> Al(const Al<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U> bool operator==(const Al<U>&) const { return true; } };
template <class T> using vec_t = std::vector<T, Al<T>>;
template <class T> T mk(float f) { if constexpr (sizeof(T) == 2) return core::to_bf16(f); else return f; }
static double wall() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static double now() { if (getenv("AB_WALL")) return wall(); timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
template <class V> bool eq(const V& a, const V& b) { return a.size() == b.size() && !memcmp(a.data(), b.data(), a.size() * sizeof(a[0])); }

template <class T>
int run(const std::string& k, int64_t tokens, int threads, int rounds) {
  kernels::MhcShape sh;
  sh.tokens = tokens; sh.d = 1024; sh.n = 4;
  const int64_t n = 4, d = sh.d, nd = n * d, N = tokens * nd;
  std::mt19937 g(7); std::normal_distribution<float> dist(0.f, 1.f);
  auto vec = [&](int64_t m, float s) { vec_t<T> v(m); for (auto& x : v) x = mk<T>(s * dist(g)); return v; };
  auto fvec = [&](int64_t m, float s) { vec_t<float> v(m); for (auto& x : v) x = s * dist(g); return v; };
  vec_t<T> X = vec(N, 1.f), dy = vec(tokens * d, 1.f), dx0 = vec(N, 0.1f), G = vec(N, 1.f), F = vec(tokens * d, 1.f);
  vec_t<float> phi = fvec(n * nd, 0.02f), b = fvec(n, 0.1f), post = fvec(tokens * n, 0.5f), C = fvec(tokens * n * n, 0.3f);
  // Outputs of A and B.
  vec_t<T> o1[2], o2[2];
  vec_t<float> f1[4], f2[4];
  std::vector<float> ws(kernels::mhc_head_backward_workspace(sh));
  core::ThreadPool pool(threads);
  double bytes = 0;
  std::function<void()> A, B;
  if (k == "head_fwd") {
    for (auto* o : {o1, o2}) o[0].assign(tokens * d, T()); for (auto* f : {f1, f2}) f[0].assign(tokens * n, 0.f);
    A = [&] { kernels::mhc_head_forward(X.data(), phi.data(), b.data(), 0.7f, o1[0].data(), f1[0].data(), sh, &pool); };
    B = [&] { kernels::mhc_head_forward_new(X.data(), phi.data(), b.data(), 0.7f, o2[0].data(), f2[0].data(), sh, &pool); };
    bytes = sizeof(T) * double(N + tokens * d) + 4.0 * n * nd;
  } else if (k == "head_bwd") {
    for (auto* o : {o1, o2}) o[0] = dx0;
    for (auto* f : {f1, f2}) f[0].assign(n * nd, 0.f), f[1].assign(n, 0.f), f[2].assign(1, 0.f);
    A = [&] { kernels::mhc_head_backward(X.data(), phi.data(), b.data(), 0.7f, dy.data(), o1[0].data(), f1[0].data(), f1[1].data(), f1[2].data(), sh, ws.data(), &pool); };
    B = [&] { kernels::mhc_head_backward_new(X.data(), phi.data(), b.data(), 0.7f, dy.data(), o2[0].data(), f2[0].data(), f2[1].data(), f2[2].data(), sh, ws.data(), &pool); };
    bytes = sizeof(T) * double(3 * N + tokens * d) + 8.0 * n * nd;
  } else if (k == "post_fwd") {
    for (auto* o : {o1, o2}) o[0].assign(N, T());
    A = [&] { kernels::mhc_post_forward(F.data(), X.data(), post.data(), C.data(), o1[0].data(), sh, &pool); };
    B = [&] { kernels::mhc_post_forward_new(F.data(), X.data(), post.data(), C.data(), o2[0].data(), sh, &pool); };
    bytes = sizeof(T) * double(2 * N + tokens * d);
  } else if (k == "post_bwd") {
    for (auto* o : {o1, o2}) o[0].assign(tokens * d, T()), o[1].assign(N, T());
    for (auto* f : {f1, f2}) f[0].assign(tokens * n, 0.f), f[1].assign(tokens * n * n, 0.f);
    A = [&] { kernels::mhc_post_backward(G.data(), F.data(), X.data(), post.data(), C.data(), o1[0].data(), o1[1].data(), f1[0].data(), f1[1].data(), sh, &pool); };
    B = [&] { kernels::mhc_post_backward_new(G.data(), F.data(), X.data(), post.data(), C.data(), o2[0].data(), o2[1].data(), f2[0].data(), f2[1].data(), sh, &pool); };
    bytes = sizeof(T) * double(3 * N + 2 * tokens * d);
  } else { std::fprintf(stderr, "unknown kernel %s\n", k.c_str()); return 2; }
  A(); B();
  bool same = true;
  for (int i = 0; i < 2; ++i) same = same && eq(o1[i], o2[i]);
  for (int i = 0; i < 4; ++i) same = same && eq(f1[i], f2[i]);
  if (const char* only = getenv("AB_ONLY")) {  // perf: only one side, rounds x 7 calls
    std::function<void()>& f = only[0] == 'A' ? A : B;
    for (int i = 0; i < rounds * 7; ++i) f();
    return 0;
  }
  if (rounds == 0) { std::printf("%s bits %s\n", k.c_str(), same ? "same" : "DIFFER"); return same ? 0 : 1; }
  auto timeit = [&](std::function<void()>& f) { std::vector<double> t; for (int i = 0; i < 7; ++i) { double t0 = now(); f(); t.push_back(now() - t0); }
                                                std::sort(t.begin(), t.end()); return t[3]; };
  std::vector<double> ta, tb, r;
  for (int i = 0; i < rounds; ++i) {
    double a, bb;
    if (i % 2) { bb = timeit(B); a = timeit(A); } else { a = timeit(A); bb = timeit(B); }
    ta.push_back(a); tb.push_back(bb); r.push_back(a / bb);
  }
  int faster = 0; for (double x : r) faster += x > 1;
  std::sort(ta.begin(), ta.end()); std::sort(tb.begin(), tb.end()); std::sort(r.begin(), r.end());
  std::printf("%s %s [%ld,4,1024] threads %d: bits %s; A %.3f ms (%.1f GB/s) B %.3f ms (%.1f GB/s); B/A speed median %.3f (%d of %d faster), range %.3f-%.3f\n",
              k.c_str(), sizeof(T) == 2 ? "bf16" : "fp32", long(tokens), threads, same ? "same" : "DIFFER", ta[rounds / 2] * 1e3, bytes / ta[rounds / 2] / 1e9,
              tb[rounds / 2] * 1e3, bytes / tb[rounds / 2] / 1e9, r[rounds / 2], faster, rounds, r[0], r[rounds - 1]);
  return same ? 0 : 1;
}
int main(int argc, char** argv) {
  if (argc < 6) { std::fprintf(stderr, "usage: ab KERNEL f32|bf16 TOKENS THREADS ROUNDS\n"); return 2; }
  const bool bf = std::string(argv[2]) == "bf16";
  const int64_t tokens = atoll(argv[3]); const int threads = atoi(argv[4]), rounds = atoi(argv[5]);
  return bf ? run<core::bf16>(argv[1], tokens, threads, rounds) : run<float>(argv[1], tokens, threads, rounds);
}
