// One-process A/B of the mHC head and post kernels (sessions 28-30): A = the base build's library (main 103e10f in session 30, with
// the saved projections and MhcGradInto: A gets the same proj and dX mode as B), B = a worktree's mhc*.cc with the entry points renamed mhcB_* (build.sh). Alternating
// rounds (order swapped each round), 7 calls a side a round (median), process CPU time
// (AB_WALL=1: wall); prints the median of the per-round A/B time ratios (B's speed), how many
// rounds B was faster, their range, and whether every output byte matched.
// B's head backward is given the projections and squares its forward saved (mhc.h proj), as the
// model's head passes them; AB_NOPROJ=1: B recomputes them (B's code without the new input).
// AB_OVERWRITE=1 (the model's head): A's dX is zeroed (std::fill, on the calling thread, as the
// model did) before each call, and B overwrites dX (MhcGradInto::kOverwrite) instead.
// AB_SAME=1: B runs A's code (same-code control).
//   abh fwd|bwd bf16|fp32 THREADS ROUNDS [TOKENS D]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>
#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/mhc.h"
using namespace trex;
using kernels::MhcShape;
namespace trex::kernels {
template <class T>
void mhcB_head_backward(const T*, const float*, const float*, float, const T*, T*, float*, float*, float*, const MhcShape&, float*, core::ThreadPool*, const float*, MhcGradInto);
template <class T>
void mhcB_post_backward(const T*, const T*, const T*, const float*, const float*, T*, T*, float*, float*, const MhcShape&, core::ThreadPool*);
template <class T>
void mhcB_post_forward(const T*, const T*, const float*, const float*, T*, const MhcShape&, core::ThreadPool*);
template <class T>
void mhcB_head_forward(const T*, const float*, const float*, float, T*, float*, const MhcShape&, core::ThreadPool*, float*);
}
static bool wall = getenv("AB_WALL") != nullptr;
static double now() { timespec t; clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); size_t m = v.size(); return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]); }

template <class A, class B, class Same>
bool rounds_ab(const char* what, int threads, int rounds, A&& a, B&& b, Same&& same) {
  a(); b(); bool ok = same();
  std::vector<double> ta, tb, r; int faster = 0;
  for (int k = 0; k < rounds; ++k) {
    std::vector<double> va, vb;
    auto t7 = [&](auto& f, std::vector<double>& o) { for (int c = 0; c < 7; ++c) { double t0 = now(); f(); o.push_back(now() - t0); } };
    if (k % 2 == 0) { t7(a, va); t7(b, vb); } else { t7(b, vb); t7(a, va); }
    ta.push_back(median(va)); tb.push_back(median(vb)); r.push_back(median(va) / median(vb)); faster += median(vb) < median(va);
  }
  a(); b(); ok = ok && same();
  std::sort(r.begin(), r.end());
  std::printf("%s%s%s%s threads %d %s: A %.3f ms B %.3f ms; B speed median %.3f (%d of %d faster), range %.3f-%.3f; bits %s\n",
              getenv("AB_SAME") ? "SAME " : "", getenv("AB_NOPROJ") ? "NOPROJ " : "", getenv("AB_OVERWRITE") ? "OVERWRITE " : "", what, threads, wall ? "wall" : "cpu",
              1e3 * median(ta), 1e3 * median(tb), median(r), faster, rounds, r.front(), r.back(), ok ? "same" : "DIFFER");
  return ok;
}

template <class T>
int run(bool bwd, int threads, int rounds, int64_t tokens, int64_t d) {
  MhcShape sh; sh.tokens = tokens; sh.d = d; sh.n = 4;
  const int64_t nd = sh.n * sh.d, tk = sh.tokens;
  core::ThreadPool pool(threads);
  std::mt19937 g(9); std::uniform_real_distribution<float> u(-1, 1);
  // bf16 through core::to_bf16: T(float) on the bf16 struct was an aggregate init of its bits
  // (session 27's abh.cc: every bf16 input 0, so its bf16 byte compares compared zeros).
  auto mk = [&](int64_t n, float s) {
    auto a = core::aligned_array<T>(n);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) == 2) a[i] = core::to_bf16(s * u(g));
      else a[i] = s * u(g);
    }
    return a;
  };
  auto mkf = [&](int64_t n, float s) { auto a = core::aligned_array<float>(n); for (int64_t i = 0; i < n; ++i) a[i] = s * u(g); return a; };
  auto X = mk(tk * nd, 1), dy = mk(tk * d, 1);
  auto phi = mkf(4 * nd, 0.02f), b = mkf(4, 0.5f);
  const bool same_code = getenv("AB_SAME") != nullptr;
  char what[96];
  std::snprintf(what, sizeof what, "head_%s %s [%lld,4,%lld]", bwd ? "bwd" : "fwd", sizeof(T) == 2 ? "bf16" : "fp32", (long long)tk, (long long)d);
  auto ya = core::aligned_array<T>(tk * d), yb = core::aligned_array<T>(tk * d);
  auto wa = core::aligned_array<float>(tk * 4), wb = core::aligned_array<float>(tk * 4);
  auto proj = core::aligned_array<float>(tk * 5);
  auto A = [&] { kernels::mhc_head_forward<T>(X.get(), phi.get(), b.get(), 0.7f, ya.get(), wa.get(), sh, &pool); };
  auto B = [&] {
    if (same_code) kernels::mhc_head_forward<T>(X.get(), phi.get(), b.get(), 0.7f, yb.get(), wb.get(), sh, &pool);
    else kernels::mhcB_head_forward<T>(X.get(), phi.get(), b.get(), 0.7f, yb.get(), wb.get(), sh, &pool, getenv("AB_NOPROJ") ? nullptr : proj.get());
  };
  auto same = [&] { return !memcmp(ya.get(), yb.get(), tk * d * sizeof(T)) && !memcmp(wa.get(), wb.get(), tk * 16); };
  if (!bwd) return rounds_ab(what, threads, rounds, A, B, same) ? 0 : 1;
  kernels::mhcB_head_forward<T>(X.get(), phi.get(), b.get(), 0.7f, yb.get(), wb.get(), sh, &pool, proj.get());
  const float* saved = getenv("AB_NOPROJ") ? nullptr : proj.get();
  auto dXa = mk(tk * nd, 0.01f), dXb = core::aligned_array<T>(tk * nd);
  std::memcpy(dXb.get(), dXa.get(), tk * nd * sizeof(T));
  auto dpa = core::aligned_array<float>(4 * nd), dpb = core::aligned_array<float>(4 * nd);
  float dba[4], dbb[4], dsa[1] = {}, dsb[1] = {};
  auto wsa = core::aligned_array<float>(kernels::mhc_head_backward_workspace(sh)), wsb = core::aligned_array<float>(kernels::mhc_head_backward_workspace(sh));
  const bool ow = getenv("AB_OVERWRITE") != nullptr;
  auto BA = [&] {
    kernels::mhc_head_backward<T>(X.get(), phi.get(), b.get(), 0.7f, dy.get(), dXa.get(), dpa.get(), dba, dsa, sh, wsa.get(), &pool, saved,
                                  ow ? kernels::MhcGradInto::kOverwrite : kernels::MhcGradInto::kAdd); };
  auto BB = [&] {
    if (same_code) kernels::mhc_head_backward<T>(X.get(), phi.get(), b.get(), 0.7f, dy.get(), dXb.get(), dpb.get(), dbb, dsb, sh, wsb.get(), &pool, saved,
                                                 ow ? kernels::MhcGradInto::kOverwrite : kernels::MhcGradInto::kAdd);
    else kernels::mhcB_head_backward<T>(X.get(), phi.get(), b.get(), 0.7f, dy.get(), dXb.get(), dpb.get(), dbb, dsb, sh, wsb.get(), &pool, saved,
                                        ow ? kernels::MhcGradInto::kOverwrite : kernels::MhcGradInto::kAdd);
  };
  // dX accumulates (+=) every call; A and B are called equally often, so their dX stay equal
  // (with AB_OVERWRITE both hold one call's dX).
  auto bsame = [&] { return !memcmp(dXa.get(), dXb.get(), tk * nd * sizeof(T)) && !memcmp(dpa.get(), dpb.get(), 16 * nd) && !memcmp(dba, dbb, 16) && !memcmp(dsa, dsb, 4); };
  return rounds_ab(what, threads, rounds, BA, BB, bsame) ? 0 : 1;
}
// The post backward (every output overwritten): A the base library, B the worktree's.
template <class T>
int run_post(int threads, int rounds, int64_t tokens, int64_t d) {
  MhcShape sh; sh.tokens = tokens; sh.d = d; sh.n = 4;
  const int64_t nd = sh.n * sh.d, tk = sh.tokens;
  core::ThreadPool pool(threads);
  std::mt19937 g(9); std::uniform_real_distribution<float> u(-1, 1);
  auto mk = [&](int64_t n, float s) {
    auto a = core::aligned_array<T>(n);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) == 2) a[i] = core::to_bf16(s * u(g));
      else a[i] = s * u(g);
    }
    return a;
  };
  auto mkf = [&](int64_t n, float s) { auto a = core::aligned_array<float>(n); for (int64_t i = 0; i < n; ++i) a[i] = s * u(g); return a; };
  auto G = mk(tk * nd, 1), F = mk(tk * d, 1), X = mk(tk * nd, 1);
  auto post = mkf(tk * 4, 1), C = mkf(tk * 16, 0.5f);
  auto dFa = core::aligned_array<T>(tk * d), dFb = core::aligned_array<T>(tk * d);
  auto dXa = core::aligned_array<T>(tk * nd), dXb = core::aligned_array<T>(tk * nd);
  auto dpa = core::aligned_array<float>(tk * 4), dpb = core::aligned_array<float>(tk * 4);
  auto dCa = core::aligned_array<float>(tk * 16), dCb = core::aligned_array<float>(tk * 16);
  const bool same_code = getenv("AB_SAME") != nullptr;
  char what[96];
  std::snprintf(what, sizeof what, "post_bwd %s [%lld,4,%lld]", sizeof(T) == 2 ? "bf16" : "fp32", (long long)tk, (long long)d);
  auto A = [&] { kernels::mhc_post_backward<T>(G.get(), F.get(), X.get(), post.get(), C.get(), dFa.get(), dXa.get(), dpa.get(), dCa.get(), sh, &pool); };
  auto B = [&] {
    if (same_code) kernels::mhc_post_backward<T>(G.get(), F.get(), X.get(), post.get(), C.get(), dFb.get(), dXb.get(), dpb.get(), dCb.get(), sh, &pool);
    else kernels::mhcB_post_backward<T>(G.get(), F.get(), X.get(), post.get(), C.get(), dFb.get(), dXb.get(), dpb.get(), dCb.get(), sh, &pool);
  };
  auto same = [&] {
    return !memcmp(dFa.get(), dFb.get(), tk * d * sizeof(T)) && !memcmp(dXa.get(), dXb.get(), tk * nd * sizeof(T)) &&
           !memcmp(dpa.get(), dpb.get(), tk * 16) && !memcmp(dCa.get(), dCb.get(), tk * 64);
  };
  return rounds_ab(what, threads, rounds, A, B, same) ? 0 : 1;
}

// The post forward: A the base library, B the worktree's.
template <class T>
int run_post_fwd(int threads, int rounds, int64_t tokens, int64_t d) {
  MhcShape sh; sh.tokens = tokens; sh.d = d; sh.n = 4;
  const int64_t nd = sh.n * sh.d, tk = sh.tokens;
  core::ThreadPool pool(threads);
  std::mt19937 g(9); std::uniform_real_distribution<float> u(-1, 1);
  auto mk = [&](int64_t n, float s) {
    auto a = core::aligned_array<T>(n);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) == 2) a[i] = core::to_bf16(s * u(g));
      else a[i] = s * u(g);
    }
    return a;
  };
  auto mkf = [&](int64_t n, float s) { auto a = core::aligned_array<float>(n); for (int64_t i = 0; i < n; ++i) a[i] = s * u(g); return a; };
  auto F = mk(tk * d, 1), X = mk(tk * nd, 1);
  auto post = mkf(tk * 4, 1), C = mkf(tk * 16, 0.5f);
  auto oa = core::aligned_array<T>(tk * nd), ob = core::aligned_array<T>(tk * nd);
  const bool same_code = getenv("AB_SAME") != nullptr;
  char what[96];
  std::snprintf(what, sizeof what, "post_fwd %s [%lld,4,%lld]", sizeof(T) == 2 ? "bf16" : "fp32", (long long)tk, (long long)d);
  auto A = [&] { kernels::mhc_post_forward<T>(F.get(), X.get(), post.get(), C.get(), oa.get(), sh, &pool); };
  auto B = [&] {
    if (same_code) kernels::mhc_post_forward<T>(F.get(), X.get(), post.get(), C.get(), ob.get(), sh, &pool);
    else kernels::mhcB_post_forward<T>(F.get(), X.get(), post.get(), C.get(), ob.get(), sh, &pool);
  };
  auto same = [&] { return !memcmp(oa.get(), ob.get(), tk * nd * sizeof(T)); };
  return rounds_ab(what, threads, rounds, A, B, same) ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "postf") == 0) {
    const int th = atoi(argv[3]), rd = atoi(argv[4]);
    const int64_t tk = argc > 5 ? atoll(argv[5]) : 4096, d = argc > 6 ? atoll(argv[6]) : 1024;
    return strcmp(argv[2], "bf16") == 0 ? run_post_fwd<core::bf16>(th, rd, tk, d) : run_post_fwd<float>(th, rd, tk, d);
  }
  if (argc >= 5 && strcmp(argv[1], "post") == 0) {
    const int th = atoi(argv[3]), rd = atoi(argv[4]);
    const int64_t tk = argc > 5 ? atoll(argv[5]) : 4096, d = argc > 6 ? atoll(argv[6]) : 1024;
    return strcmp(argv[2], "bf16") == 0 ? run_post<core::bf16>(th, rd, tk, d) : run_post<float>(th, rd, tk, d);
  }
  if (argc < 5) { std::fprintf(stderr, "usage: abh fwd|bwd|post|postf bf16|fp32 THREADS ROUNDS [TOKENS D]\n"); return 2; }
  const bool bwd = strcmp(argv[1], "bwd") == 0;
  const int th = atoi(argv[3]), rd = atoi(argv[4]);
  const int64_t tk = argc > 5 ? atoll(argv[5]) : 4096, d = argc > 6 ? atoll(argv[6]) : 1024;
  return strcmp(argv[2], "bf16") == 0 ? run<core::bf16>(bwd, th, rd, tk, d) : run<float>(bwd, th, rd, tk, d);
}
