// One-process A/B of mhc_post_backward<bf16> (and fp32): A = main's build (libtrex_kernels.a),
// B = a worktree's mhc.cc with its entry points renamed mhcB_* (build.sh). Alternating rounds, 7
// calls a side a round (median), process CPU time; prints the median per-round B/A speed, how
// many rounds B was faster and whether every output byte matched.  abm bf16|fp32 THREADS ROUNDS [head]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>
#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/mhc.h"
using namespace trex;
using kernels::MhcShape;
template <class T>
using PB = void(const T*, const T*, const T*, const float*, const float*, T*, T*, float*, float*, const MhcShape&, core::ThreadPool*);
namespace trex::kernels {
template <class T>
void mhcB_post_backward(const T*, const T*, const T*, const float*, const float*, T*, T*, float*, float*, const MhcShape&, core::ThreadPool*);
template <class T>
void mhcB_head_backward(const T*, const float*, const float*, float, const T*, T*, float*, float*, float*, const MhcShape&, float*, core::ThreadPool*);
}
static double now() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); size_t m = v.size(); return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]); }
template <class T>
int run(int threads, int rounds, PB<T>* Bf) {
  MhcShape sh; sh.tokens = 4096; sh.d = 1024; sh.n = 4;
  const int64_t nd = sh.n * sh.d, tk = sh.tokens;
  core::ThreadPool pool(threads);
  std::mt19937 g(7); std::uniform_real_distribution<float> u(-1, 1);
  auto mk = [&](int64_t n) { auto a = core::aligned_array<T>(n); for (int64_t i = 0; i < n; ++i) a[i] = T(u(g)); return a; };
  auto mkf = [&](int64_t n) { auto a = core::aligned_array<float>(n); for (int64_t i = 0; i < n; ++i) a[i] = u(g); return a; };
  auto G = mk(tk * nd), F = mk(tk * sh.d), X = mk(tk * nd);
  auto post = mkf(tk * 4), C = mkf(tk * 16);
  auto dFa = core::aligned_array<T>(tk * sh.d), dXa = core::aligned_array<T>(tk * nd), dFb = core::aligned_array<T>(tk * sh.d), dXb = core::aligned_array<T>(tk * nd);
  auto dpa = core::aligned_array<float>(tk * 4), dCa = core::aligned_array<float>(tk * 16), dpb = core::aligned_array<float>(tk * 4), dCb = core::aligned_array<float>(tk * 16);
  const bool same_code = getenv("AB_SAME") != nullptr;
  auto A = [&] { kernels::mhc_post_backward<T>(G.get(), F.get(), X.get(), post.get(), C.get(), dFa.get(), dXa.get(), dpa.get(), dCa.get(), sh, &pool); };
  auto B = [&] { (same_code ? &kernels::mhc_post_backward<T> : Bf)(G.get(), F.get(), X.get(), post.get(), C.get(), dFb.get(), dXb.get(), dpb.get(), dCb.get(), sh, &pool); };
  auto same = [&] { return !memcmp(dFa.get(), dFb.get(), tk * sh.d * sizeof(T)) && !memcmp(dXa.get(), dXb.get(), tk * nd * sizeof(T)) && !memcmp(dpa.get(), dpb.get(), tk * 16) && !memcmp(dCa.get(), dCb.get(), tk * 64); };
  A(); B(); bool ok = same();
  std::vector<double> ta, tb, r; int faster = 0;
  for (int k = 0; k < rounds; ++k) {
    std::vector<double> a, b;
    auto t7 = [&](auto f, std::vector<double>& o) { for (int c = 0; c < 7; ++c) { double t0 = now(); f(); o.push_back(now() - t0); } };
    if (k % 2 == 0) { t7(A, a); t7(B, b); } else { t7(B, b); t7(A, a); }
    ta.push_back(median(a)); tb.push_back(median(b)); r.push_back(median(a) / median(b)); faster += median(b) < median(a);
  }
  A(); B(); ok = ok && same();
  std::sort(r.begin(), r.end());
  std::printf("%s post_bwd %s threads %d: A %.3f ms B %.3f ms; B/A speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              same_code ? "SAME" : "", sizeof(T) == 2 ? "bf16" : "fp32", threads, 1e3 * median(ta), 1e3 * median(tb), median(r), faster, rounds, r.front(), r.back(), ok ? "same" : "DIFFER");
  return ok ? 0 : 1;
}
template <class T>
int run_head(int threads, int rounds) {
  MhcShape sh; sh.tokens = 4096; sh.d = 1024; sh.n = 4;
  const int64_t nd = sh.n * sh.d, tk = sh.tokens;
  core::ThreadPool pool(threads);
  std::mt19937 g(9); std::uniform_real_distribution<float> u(-1, 1);
  auto mk = [&](int64_t n, float s) { auto a = core::aligned_array<T>(n); for (int64_t i = 0; i < n; ++i) a[i] = T(s * u(g)); return a; };
  auto mkf = [&](int64_t n, float s) { auto a = core::aligned_array<float>(n); for (int64_t i = 0; i < n; ++i) a[i] = s * u(g); return a; };
  auto X = mk(tk * nd, 1), dy = mk(tk * sh.d, 1);
  auto phi = mkf(4 * nd, 0.02f), b = mkf(4, 0.5f);
  auto dXa = mk(tk * nd, 0.01f), dXb = core::aligned_array<T>(tk * nd);
  std::memcpy(dXb.get(), dXa.get(), tk * nd * sizeof(T));
  auto dpa = core::aligned_array<float>(4 * nd), dpb = core::aligned_array<float>(4 * nd);
  float dba[4], dbb[4], dsa[3] = {}, dsb[3] = {};
  auto wa = core::aligned_array<float>(kernels::mhc_head_backward_workspace(sh)), wb = core::aligned_array<float>(kernels::mhc_head_backward_workspace(sh));
  const bool same_code = getenv("AB_SAME") != nullptr;
  auto A = [&] { kernels::mhc_head_backward<T>(X.get(), phi.get(), b.get(), 0.7f, dy.get(), dXa.get(), dpa.get(), dba, dsa, sh, wa.get(), &pool); };
  auto B = [&] { (same_code ? &kernels::mhc_head_backward<T> : &kernels::mhcB_head_backward<T>)(X.get(), phi.get(), b.get(), 0.7f, dy.get(), dXb.get(), dpb.get(), dbb, dsb, sh, wb.get(), &pool); };
  auto same = [&] { return !memcmp(dXa.get(), dXb.get(), tk * nd * sizeof(T)) && !memcmp(dpa.get(), dpb.get(), 16 * nd) && !memcmp(dba, dbb, 16) && !memcmp(dsa, dsb, 4); };
  A(); B(); bool ok = same();
  std::vector<double> ta, tb, r; int faster = 0;
  for (int k = 0; k < rounds; ++k) {
    std::vector<double> a, bb;
    auto t7 = [&](auto f, std::vector<double>& o) { for (int c = 0; c < 7; ++c) { double t0 = now(); f(); o.push_back(now() - t0); } };
    if (k % 2 == 0) { t7(A, a); t7(B, bb); } else { t7(B, bb); t7(A, a); }
    ta.push_back(median(a)); tb.push_back(median(bb)); r.push_back(median(a) / median(bb)); faster += median(bb) < median(a);
  }
  ok = ok && same();
  std::sort(r.begin(), r.end());
  std::printf("%s head_bwd %s threads %d: A %.3f ms B %.3f ms; B/A speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              same_code ? "SAME" : "", sizeof(T) == 2 ? "bf16" : "fp32", threads, 1e3 * median(ta), 1e3 * median(tb), median(r), faster, rounds, r.front(), r.back(), ok ? "same" : "DIFFER");
  return ok ? 0 : 1;
}
int main(int argc, char** argv) {
  if (argc > 4 && strcmp(argv[4], "head") == 0)
    return strcmp(argv[1], "bf16") == 0 ? run_head<core::bf16>(atoi(argv[2]), atoi(argv[3])) : run_head<float>(atoi(argv[2]), atoi(argv[3]));
  if (argc < 4) { std::fprintf(stderr, "usage: abm bf16|fp32 THREADS ROUNDS [head]\n"); return 2; }
  const int th = atoi(argv[2]), rd = atoi(argv[3]);
  return strcmp(argv[1], "bf16") == 0 ? run<core::bf16>(th, rd, &kernels::mhcB_post_backward<core::bf16>) : run<float>(th, rd, &kernels::mhcB_post_backward<float>);
}
