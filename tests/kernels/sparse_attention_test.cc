// Shared-KV sparse attention with sink: fused vs the eager chain on window-only, ratio-4 (random
// top-k sets, v_t < k, unused slots) and ratio-128 (dense visible entries) key sets, s < win
// included, odd head dims, fp32 and bf16; gating (poisoned outputs, inputs unchanged); finite
// differences of dq, dkv, dkv_comp and dsink; bit-identical results for 1-3 threads (fp32 and
// bf16, hd 128 and window 64 among them); the backward under every tunable chunk count, in the
// workspace sized before the tuning was set.
//
// Tolerances (atol = rtol): fp32 1e-4 (same math, different summation order and exp); bf16
// storage 1e-2 for every stored output (one bf16 ulp is 2^-8 relative; both sides accumulate
// dkv and dkv_comp in fp32 and round once); lse, comp_prob and dsink are fp32 in both: 1e-4.
// bf16 gradients, the kernel's and the reference's, are held to an fp64 evaluation
// (backward_fp64) rather than to each other: each rounds its stored outputs to bf16 once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "grad_check.h"
#include "kernel_test_util.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/kernels/tuning.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

struct AttnCase {
  int64_t s, H, hd, win;
  int ratio;  // 0 window only, 4 top-k, 128 dense
  int64_t k;  // top-k for ratio 4
  int dists = 3;  // check_against_ref runs random_vec's distributions 0 .. dists - 1
};
// {200, 2, 16, 8, 4, 20}: from token 79 on, 20 compressed keys are visible, so comp_prob's
// 16-key step runs (once, then a tail of 4) as well as its per-key tail.
// {300, 2, 40, 64, 4, 8}: windows of 49-64 keys reach column_dots' 4-vector blocks, and hd 40
// with 16 in-range keys reaches KeyColumns' transpose16 followed by its scalar e tail. Here with
// distributions 0 and 1 only: with the heavy tails (dist 2) many rows' softmax saturates and dq
// is the cancellation's rounding noise, past the fixed 1e-4 in 8 of 24000 entries (up to 4e-4,
// e.g. 16765: -8.70e-5 against the reference's +8.70e-5; session 14's dot-tile kernel misses
// the same entries by the same amounts). F32HeavyTailedDqWithinItsRoundingBound checks that
// case against a bound derived from the inputs.
// {37, 8, 16, 8, 4, 4} and {29, 12, 24, 20, 4, 3}: 8 and 12 heads, so the AVX-512 8-row tiles
// of the window scores and O = P K (and the backward's 8-head D sums) run, 12 with a 4-row rest.
const AttnCase kCases[] = {{5, 2, 8, 3, 0, 0},    {23, 3, 16, 8, 4, 4},  {6, 2, 7, 16, 4, 2},
                           {300, 2, 12, 32, 128, 0}, {40, 4, 64, 9, 4, 5}, {17, 1, 33, 4, 4, 8},
                           {200, 2, 16, 8, 4, 20}, {300, 2, 40, 64, 4, 8, 2},
                           {37, 8, 16, 8, 4, 4},   {29, 12, 24, 20, 4, 3}};

// Top-k style index sets for ratio 4: min(k, v_t) distinct visible entries in random order.
std::vector<int32_t> random_topk(int64_t s, int64_t k, int ratio, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> idx(static_cast<size_t>(s * k), -1);
  for (int64_t t = 0; t < s; ++t) {
    int64_t v = (t + 1) / ratio;
    std::vector<int32_t> all(static_cast<size_t>(v));
    for (int64_t i = 0; i < v; ++i) all[size_t(i)] = int32_t(i);
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t c = 0; c < std::min(k, v); ++c) idx[size_t(t * k + c)] = all[size_t(c)];
  }
  return idx;
}

template <class T>
struct Problem {
  SparseAttnShape sh;
  std::vector<T> q, kv, kc, d_o;
  std::vector<float> sink;
  std::vector<int32_t> idx;
};

template <class T>
Problem<T> make_problem(const AttnCase& c, uint32_t seed, int dist) {
  Problem<T> p;
  p.sh.s = c.s;
  p.sh.heads = c.H;
  p.sh.hd = c.hd;
  p.sh.window = c.win;
  p.sh.n_comp = c.ratio ? c.s / c.ratio : 0;
  if (c.ratio == 4) {
    p.sh.k_comp = c.k;
    p.idx = random_topk(c.s, c.k, 4, seed + 5);
  } else if (c.ratio == 128) {
    p.idx = sparse_attention_dense_index(c.s, 128, p.sh.n_comp, &p.sh.k_comp);
  }
  p.q = random_vec<T>(c.s * c.H * c.hd, seed, dist, 1.5f);
  p.kv = random_vec<T>(c.s * c.hd, seed + 1, dist);
  p.kc = random_vec<T>(p.sh.n_comp * c.hd, seed + 2, dist);
  p.d_o = random_vec<T>(c.s * c.H * c.hd, seed + 3, 0);
  p.sink = random_vec<float>(c.H, seed + 4, 0);
  return p;
}

// The backward in double from the stored inputs' values: P from the scores (not from o or lse),
// D_h = sum_j P_j dP_j, so this is the exact gradient of the stored q, keys, sink and d_o.
// (Until session 21 the eager reference took D_h = <do_h, o_h> from o stored in bf16, which
// moved D_h by up to 2^-8 sum_e |do_e o_e|; the tests allowed it that first-order error on top.
// Both now take D from their fp32 P and dP and are held to the same tolerance.)
struct Grad64 {
  std::vector<double> dq, dkv, dkc, ds;
};
template <class T>
void backward_fp64(const Problem<T>& p, Grad64* g) {
  const SparseAttnShape& sh = p.sh;
  const int64_t H = sh.heads, hd = sh.hd;
  const double tau = 1.0 / std::sqrt(double(hd));
  g->dq.assign(p.q.size(), 0.0), g->dkv.assign(p.kv.size(), 0.0), g->dkc.assign(p.kc.size(), 0.0);
  g->ds.assign(size_t(H), 0.0);
  for (int64_t t = 0; t < sh.s; ++t) {
    std::vector<const T*> keys;
    std::vector<size_t> at;  // offset of each key's row
    std::vector<bool> comp;
    for (int64_t j = std::max<int64_t>(0, t - sh.window + 1); j <= t; ++j)
      keys.push_back(&p.kv[size_t(j * hd)]), at.push_back(size_t(j * hd)), comp.push_back(false);
    for (int64_t slot = 0; slot < sh.k_comp; ++slot)
      if (int32_t i = p.idx[size_t(t * sh.k_comp + slot)]; i >= 0)
        keys.push_back(&p.kc[size_t(i * hd)]), at.push_back(size_t(i * hd)), comp.push_back(true);
    const size_t n = keys.size();
    for (int64_t h = 0; h < H; ++h) {
      const T* qv = &p.q[size_t((t * H + h) * hd)];
      const T* dov = &p.d_o[size_t((t * H + h) * hd)];
      std::vector<double> sc(n), P(n), dP(n);
      double M = p.sink[size_t(h)];
      for (size_t j = 0; j < n; ++j) {
        double a = 0, b = 0;
        for (int64_t e = 0; e < hd; ++e) a += double(val(qv[e])) * val(keys[j][e]), b += double(val(dov[e])) * val(keys[j][e]);
        sc[j] = tau * a, dP[j] = b, M = std::max(M, sc[j]);
      }
      double Z = std::exp(p.sink[size_t(h)] - M), D = 0;
      for (size_t j = 0; j < n; ++j) Z += std::exp(sc[j] - M);
      for (size_t j = 0; j < n; ++j) P[j] = std::exp(sc[j] - M) / Z, D += P[j] * dP[j];
      const double Ps = std::exp(p.sink[size_t(h)] - M) / Z;
      for (size_t j = 0; j < n; ++j) {
        const double dS = P[j] * (dP[j] - D);
        double* dk = (comp[j] ? g->dkc.data() : g->dkv.data()) + at[j];
        for (int64_t e = 0; e < hd; ++e) {
          g->dq[size_t((t * H + h) * hd + e)] += tau * dS * val(keys[j][e]);
          dk[e] += tau * dS * val(qv[e]) + P[j] * val(dov[e]);
        }
      }
      g->ds[size_t(h)] -= Ps * D;
    }
  }
}

// Each element of got within tol (atol = rtol) of the fp64 x, plus extra[i] where given.
template <class T>
void expect_near_fp64(const std::vector<T>& got, const std::vector<double>& x, double tol,
                      const std::vector<double>* extra, const std::string& what) {
  ASSERT_EQ(got.size(), x.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double allow = tol * (1 + std::fabs(x[i])) + (extra ? (*extra)[i] : 0.0);
    if (!(std::fabs(double(val(got[i])) - x[i]) <= allow) && bad++ < 3)
      ADD_FAILURE() << what << " [" << i << "]: " << val(got[i]) << " fp64 " << x[i] << " allowance " << allow;
  }
  EXPECT_EQ(bad, 0) << what;
}

template <class T>
void check_against_ref(double tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 100;
  for (const AttnCase& c : kCases) {
    for (int dist = 0; dist < c.dists; ++dist, seed += 10) {
      std::string tag = "s " + std::to_string(c.s) + " H " + std::to_string(c.H) + " hd " +
                        std::to_string(c.hd) + " ratio " + std::to_string(c.ratio) + " dist " +
                        std::to_string(dist);
      Problem<T> p = make_problem<T>(c, seed, dist);
      Problem<T> p0 = p;
      const SparseAttnShape& sh = p.sh;
      size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
      std::vector<T> o(no, nan_value<T>()), orf(no, nan_value<T>());
      std::vector<float> lse(static_cast<size_t>(sh.s * sh.heads), NAN), lser = lse;
      std::vector<float> cp(static_cast<size_t>(sh.s * sh.k_comp), NAN), cpr = cp;
      sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                               o.data(), lse.data(), cp.data(), sh, &pool);
      sparse_attention_forward_ref(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(),
                                   p.sink.data(), orf.data(), lser.data(), cpr.data(), sh, &pool);
      expect_close(o, orf, tol, tag + " o");
      expect_close(lse, lser, 1e-4, tag + " lse");
      expect_close(cp, cpr, 1e-4, tag + " comp_prob");
      std::vector<T> dq(no, nan_value<T>()), dqr = dq;
      std::vector<T> dkv(p.kv.size(), nan_value<T>()), dkvr = dkv;
      std::vector<T> dkc(p.kc.size(), nan_value<T>()), dkcr = dkc;
      std::vector<float> ds(static_cast<size_t>(sh.heads), NAN), dsr = ds;
      std::vector<float> ws(static_cast<size_t>(sparse_attention_backward_workspace(sh)), NAN);
      sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(),
                                p.sink.data(), lse.data(), p.d_o.data(), dq.data(),
                                dkv.data(), dkc.data(), ds.data(), sh, ws.data(), &pool);
      sparse_attention_backward_ref(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(),
                                    p.sink.data(), lse.data(), p.d_o.data(), dqr.data(),
                                    dkvr.data(), dkcr.data(), dsr.data(), sh, &pool);
      EXPECT_TRUE(same_bytes(p.q, p0.q) && same_bytes(p.kv, p0.kv) && same_bytes(p.kc, p0.kc) &&
                  same_bytes(p.d_o, p0.d_o) && same_bytes(p.sink, p0.sink) &&
                  same_bytes(p.idx, p0.idx))
          << tag << ": an input changed";
      for (const auto* v : {&o, &dq, &dkv, &dkc})
        for (const T& x : *v) ASSERT_FALSE(std::isnan(val(x))) << tag << ": output not written";
      if constexpr (std::is_same_v<T, float>) {
        expect_close(dq, dqr, tol, tag + " dq");
        expect_close(dkv, dkvr, tol, tag + " dkv");
        expect_close(dkc, dkcr, tol, tag + " dkv_comp");
        expect_close(ds, dsr, 1e-4, tag + " dsink");
      } else {
        // bf16: the kernel and the reference each round dq, dkv and dkv_comp to bf16 once, so
        // the two can differ by about two bf16 steps; each is held to the exact gradient of the
        // stored inputs (fp64) within the storage tolerance (dsink, fp32, within 1e-4).
        Grad64 x;
        backward_fp64(p, &x);
        expect_near_fp64(dq, x.dq, tol, nullptr, tag + " dq vs fp64");
        expect_near_fp64(dkv, x.dkv, tol, nullptr, tag + " dkv vs fp64");
        expect_near_fp64(dkc, x.dkc, tol, nullptr, tag + " dkv_comp vs fp64");
        expect_near_fp64(ds, x.ds, 1e-4, nullptr, tag + " dsink vs fp64");
        expect_near_fp64(dqr, x.dq, tol, nullptr, tag + " reference dq vs fp64");
        expect_near_fp64(dkvr, x.dkv, tol, nullptr, tag + " reference dkv vs fp64");
        expect_near_fp64(dkcr, x.dkc, tol, nullptr, tag + " reference dkv_comp vs fp64");
        expect_near_fp64(dsr, x.ds, 1e-4, nullptr, tag + " reference dsink vs fp64");
        expect_close(ds, dsr, 1e-4, tag + " dsink");
      }
    }
  }
}

TEST(SparseAttention, F32MatchesReference) { check_against_ref<float>(1e-4); }
TEST(SparseAttention, Bf16MatchesReference) { check_against_ref<core::bf16>(1e-2); }

// dq where the fixed 1e-4 cannot hold: heavy-tailed inputs (dist 2) saturate many rows' softmax,
// and there dq = tau sum_j P_j (dP_j - D) k_j is the cancellation of dP_j against D, so both the
// kernel and the reference return rounding noise whose size follows from the inputs, not from
// the result. Each element is checked against 1e-4 (atol = rtol) plus a first-order bound on the
// rounding of both computations (u = 2^-24, g(m) = m u), from the inputs in double:
//   |d dq_e| <= 2 tau sum_j |k_je| [P_j g(hd) (sum|do k_j| + sum|do o|)      (dP_j and D)
//                                  + |dS_j| (g(hd) tau sum|q k_j| + 4 u)   (s_j -> P_j, dS_j)
//                                  + |dS_j| (g(n + 1) + 4 u)                (P_j's normaliser)
//                                  + g(n) |dS_j|]                           (the sum over keys)
// with dS_j = P_j (dP_j - D) and the keys j of the query (window and selected entries); the 2
// counts the kernel's and the reference's roundings (both take D from their P and dP, not from
// o, with rounding of the same order as the sum|do o| term). The kernel takes P_j = exp(s_j - lse) from the forward's lse, while
// the reference ignores lse and normalises its own exponentials (sparse_attention_ref.cc), so
// each side's P_j carries its own normalisation error, a relative g(n + 1) for the sum of the
// n exponentials and the sink's, plus 4 u for the log, exp or division and the exponent's
// rounding. The 4 u of the exponentials themselves (the kernel's exp16 polynomial, libm's exp
// in the reference) are a stated allowance, not derived. So this is a first-order estimate of
// the rounding, not a proven bound; at this case it is about 30x the largest difference seen,
// so it catches a gross dq error only; the same case at dist 0 and 1 keeps the fixed 1e-4 (in
// F32MatchesReference). Everything else (o, lse, comp_prob, dkv, dkv_comp, dsink) is held to
// 1e-4.
TEST(SparseAttention, F32HeavyTailedDqWithinItsRoundingBound) {
  core::ThreadPool pool(2);
  const AttnCase c{300, 2, 40, 64, 4, 8};
  Problem<float> p = make_problem<float>(c, 100 + 10 * 7 * 3 + 20, 2);  // the seed check_against_ref gave it
  const SparseAttnShape& sh = p.sh;
  const int64_t H = sh.heads, hd = sh.hd, no = sh.s * H * hd;
  std::vector<float> o(static_cast<size_t>(no)), lse(static_cast<size_t>(sh.s * H)),
      cp(static_cast<size_t>(sh.s * sh.k_comp));
  sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                           o.data(), lse.data(), cp.data(), sh, &pool);
  std::vector<float> orf(o), lser(lse), cpr(cp);
  sparse_attention_forward_ref(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                               orf.data(), lser.data(), cpr.data(), sh, &pool);
  expect_close(o, orf, 1e-4, "o");
  expect_close(lse, lser, 1e-4, "lse");
  expect_close(cp, cpr, 1e-4, "comp_prob");
  std::vector<float> dq(static_cast<size_t>(no)), dqr(dq), dkv(p.kv.size()), dkvr(dkv), dkc(p.kc.size()),
      dkcr(dkc);
  std::vector<float> ds(static_cast<size_t>(H)), dsr(ds);
  sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                            lse.data(), p.d_o.data(), dq.data(), dkv.data(), dkc.data(),
                            ds.data(), sh, nullptr, &pool);
  sparse_attention_backward_ref(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                                lse.data(), p.d_o.data(), dqr.data(), dkvr.data(),
                                dkcr.data(), dsr.data(), sh, &pool);
  // dkv against fp64, not the reference: here the reference's own dkv is up to 2.0e-4 from the
  // fp64 gradient (2.3e-4 while its D came from o; the kernel's 1.7e-4; both now take D from P
  // and dP, bench/results/attn_s21/acc_f32_heavy.log), and before session 21 the two differed
  // by more than 1e-4 (dkv[5008]: 1.24597 against 1.24621); the kernel is held to 1e-4 of fp64.
  Grad64 x;
  backward_fp64(p, &x);
  expect_near_fp64(dkv, x.dkv, 1e-4, nullptr, "dkv vs fp64");
  expect_close(dkc, dkcr, 1e-4, "dkv_comp");
  expect_close(ds, dsr, 1e-4, "dsink");
  const double u = std::ldexp(1.0, -24), tau = 1.0 / std::sqrt(double(hd));
  int64_t beyond_fixed = 0, bad = 0;
  double worst = 0;  // the largest |dq - dqr| over its allowance
  std::vector<double> bounds;  // each element's bound over its fixed tolerance
  for (int64_t t = 0; t < sh.s; ++t) {
    std::vector<const float*> keys;
    for (int64_t j = std::max<int64_t>(0, t - sh.window + 1); j <= t; ++j) keys.push_back(&p.kv[size_t(j * hd)]);
    for (int64_t slot = 0; slot < sh.k_comp; ++slot)
      if (int32_t i = p.idx[size_t(t * sh.k_comp + slot)]; i >= 0) keys.push_back(&p.kc[size_t(i * hd)]);
    const double n = double(keys.size());
    for (int64_t h = 0; h < H; ++h) {
      const float* qv = &p.q[size_t((t * H + h) * hd)];
      const float* dov = &p.d_o[size_t((t * H + h) * hd)];
      const float* ov = &o[size_t((t * H + h) * hd)];
      double D = 0, B = 0;
      for (int64_t e = 0; e < hd; ++e) D += double(dov[e]) * ov[e], B += std::fabs(double(dov[e]) * ov[e]);
      std::vector<double> coef;
      for (const float* k : keys) {
        double s = 0, C = 0, dP = 0, A = 0;
        for (int64_t e = 0; e < hd; ++e) {
          s += double(qv[e]) * k[e], C += std::fabs(double(qv[e]) * k[e]);
          dP += double(dov[e]) * k[e], A += std::fabs(double(dov[e]) * k[e]);
        }
        const double P = std::exp(tau * s - lse[size_t(t * H + h)]), dS = std::fabs(P * (dP - D));
        coef.push_back(P * hd * u * (A + B) + dS * (hd * u * tau * C + 4 * u) + dS * ((n + 1) * u + 4 * u) +
                       n * u * dS);
      }
      for (int64_t e = 0; e < hd; ++e) {
        double bound = 0;
        for (size_t j = 0; j < keys.size(); ++j) bound += coef[j] * std::fabs(double(keys[j][e]));
        bound *= 2 * tau;
        const size_t at = size_t((t * H + h) * hd + e);
        const double diff = std::fabs(double(dq[at]) - dqr[at]), fixed = 1e-4 * (1 + std::fabs(double(dqr[at])));
        beyond_fixed += diff > fixed;
        bounds.push_back(bound / fixed);
        worst = std::max(worst, diff / (fixed + bound));
        if (diff > fixed + bound && bad++ < 3)
          ADD_FAILURE() << "dq[" << at << "]: fused " << dq[at] << " ref " << dqr[at] << ", bound " << bound;
      }
    }
  }
  std::sort(bounds.begin(), bounds.end());
  EXPECT_EQ(bad, 0);
  // Fails if the kernel or the reference becomes more accurate or sums in another order (another
  // ISA, a GEMM change) so that no element needs more than the fixed 1e-4: that means "pick a
  // harder case (seed, distribution)", not a regression.
  EXPECT_GT(beyond_fixed, 0) << "no element needed the bound: the case no longer tests it; pick "
                                "a harder case (this is not an accuracy regression)";
  std::printf("dq: %lld of %lld elements beyond the fixed 1e-4, all within it plus the bound; worst "
              "|difference| / allowance %.3f; bound / fixed tolerance median %.2f, 99th percentile "
              "%.1f\n", (long long)beyond_fixed, (long long)no, worst, bounds[bounds.size() / 2],
              bounds[bounds.size() * 99 / 100]);
}

TEST(SparseAttention, BackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  for (AttnCase c : {AttnCase{13, 2, 6, 4, 4, 3}, AttnCase{260, 2, 5, 8, 128, 0}}) {
    Problem<float> p = make_problem<float>(c, 7, 0);
    const SparseAttnShape& sh = p.sh;
    size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
    std::vector<float> o(no), lse(static_cast<size_t>(sh.s * sh.heads));
    sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                             o.data(), lse.data(), nullptr, sh, &pool);
    std::vector<float> dq(no), dkv(p.kv.size()), dkc(p.kc.size()), ds(static_cast<size_t>(sh.heads));
    sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                              lse.data(), p.d_o.data(), dq.data(), dkv.data(),
                              dkc.data(), ds.data(), sh, nullptr, &pool);
    auto loss = [&] {
      std::vector<float> oo(no), ll(lse.size());
      sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                               oo.data(), ll.data(), nullptr, sh, &pool);
      return weighted_sum(oo, p.d_o, [](float v) { return v; });
    };
    std::string tag = "ratio " + std::to_string(c.ratio);
    expect_grad_matches_fd(tag + " dq", p.q.data(), int64_t(p.q.size()), dq.data(), loss);
    expect_grad_matches_fd(tag + " dkv", p.kv.data(), int64_t(p.kv.size()), dkv.data(), loss);
    expect_grad_matches_fd(tag + " dkv_comp", p.kc.data(), int64_t(p.kc.size()), dkc.data(), loss);
    expect_grad_matches_fd(tag + " dsink", p.sink.data(), sh.heads, ds.data(), loss);
  }
}

// fp32 (its forward groups 4 tokens' scores before their outputs, in per-thread scratch) and
// bf16 storage; the step's head dim 128 and window 64 (column_dots' quarters of 32, per-thread
// key-column blocks over several blocks) besides an odd small shape.
template <class T>
void expect_same_bits_for_1_to_3_threads(const AttnCase& c) {
  Problem<T> p = make_problem<T>(c, 9, 2);
  const SparseAttnShape& sh = p.sh;
  size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
  std::vector<T> ref;
  std::vector<float> ref32;
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    std::vector<T> o(no), dq(no), dkv(p.kv.size()), dkc(p.kc.size());
    std::vector<float> lse(static_cast<size_t>(sh.s * sh.heads)), ds(static_cast<size_t>(sh.heads));
    std::vector<float> cp(static_cast<size_t>(sh.s * sh.k_comp));
    sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                             o.data(), lse.data(), cp.data(), sh, &pool);
    sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                              lse.data(), p.d_o.data(), dq.data(), dkv.data(),
                              dkc.data(), ds.data(), sh, nullptr, &pool);
    std::vector<T> all = o;
    for (const auto* v : {&dq, &dkv, &dkc}) all.insert(all.end(), v->begin(), v->end());
    std::vector<float> f32 = lse;  // fp32 in both storages
    f32.insert(f32.end(), ds.begin(), ds.end());
    f32.insert(f32.end(), cp.begin(), cp.end());
    if (threads == 1) {
      ref = all;
      ref32 = f32;
    } else {
      EXPECT_TRUE(same_bytes(all, ref) && same_bytes(f32, ref32)) << threads << " threads, hd " << c.hd;
    }
  }
}

// Window 0 would divide by zero in KeyColumns: both kernels refuse it before writing anything.
TEST(SparseAttention, WindowBelowOneThrowsBeforeAnyWrite) {
  Problem<float> p = make_problem<float>({16, 2, 16, 4, 4, 2}, 7, 0);
  p.sh.window = 0;
  const SparseAttnShape& sh = p.sh;
  const size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
  std::vector<float> o(no, 3.f), lse(static_cast<size_t>(sh.s * sh.heads), 3.f),
      cp(static_cast<size_t>(sh.s * sh.k_comp), 3.f);
  EXPECT_THROW(sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                                        o.data(), lse.data(), cp.data(), sh, nullptr),
               std::invalid_argument);
  std::vector<float> dq(no, 3.f), dkv(p.kv.size(), 3.f), dkc(p.kc.size(), 3.f),
      ds(static_cast<size_t>(sh.heads), 3.f);
  EXPECT_THROW(sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                                         lse.data(), p.d_o.data(), dq.data(), dkv.data(),
                                         dkc.data(), ds.data(), sh, nullptr, nullptr),
               std::invalid_argument);
  for (const auto* v : {&o, &lse, &cp, &dq, &dkv, &dkc, &ds})
    for (float x : *v) ASSERT_EQ(x, 3.f) << "written before the check";
}

TEST(SparseAttention, DeterministicAcrossThreadCounts) {
  for (const AttnCase& c : {AttnCase{150, 3, 24, 16, 4, 6}, AttnCase{300, 2, 128, 64, 4, 8}}) {
    expect_same_bits_for_1_to_3_threads<core::bf16>(c);
    expect_same_bits_for_1_to_3_threads<float>(c);
  }
}

// The forward's work split (session 24): threads claim whole key-column blocks from spread
// starting points, run them in query_block-token pieces, and join the blocks still running once
// every block is claimed. Whatever the piece size (1 token, 3, the built-in 4, a whole block, more
// than a block) and thread count (1-4, also more threads than blocks), every token is written
// (outputs start as NaN) with the bits of the built-in split on one thread.
TEST(SparseAttention, ForwardSameBitsUnderEveryPieceSizeAndThreadCount) {
  struct Restore {
    ~Restore() { set_active_tuning(nullptr); }
  } restore;
  // {40, 2, 16, 8, 4, 4}: one block of 64 tokens for up to 4 threads; {300, 2, 32, 16, 4, 6}:
  // 5 blocks, the last one partial; {520, 8, 128, 64, 128, 0}: 9 blocks at the step's heads.
  for (AttnCase c : {AttnCase{40, 2, 16, 8, 4, 4}, AttnCase{300, 2, 32, 16, 4, 6},
                     AttnCase{520, 8, 128, 64, 128, 0}}) {
    Problem<float> p = make_problem<float>(c, 41, 1);
    const SparseAttnShape& sh = p.sh;
    const size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
    const size_t nl = static_cast<size_t>(sh.s * sh.heads), ncp = static_cast<size_t>(sh.s * sh.k_comp);
    set_active_tuning(nullptr);
    std::vector<float> o0(no), lse0(nl), cp0(ncp);
    {
      core::ThreadPool pool(1);
      sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                               o0.data(), lse0.data(), cp0.data(), sh, &pool);
    }
    for (float v : o0) ASSERT_FALSE(std::isnan(v)) << "s " << sh.s;
    for (int64_t piece : {1, 3, 4, 64, 200}) {
      auto t = std::make_shared<Tuning>();
      t->set("sparse_attention.fwd", "*", {{"query_block", piece}});
      set_active_tuning(t);
      for (int threads : {1, 2, 3, 4}) {
        core::ThreadPool pool(threads);
        std::vector<float> o(no, NAN), lse(nl, NAN), cp(ncp, NAN);
        sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                                 o.data(), lse.data(), cp.data(), sh, &pool);
        EXPECT_TRUE(same_bytes(o, o0) && same_bytes(lse, lse0) && same_bytes(cp, cp0))
            << "s " << sh.s << " query_block " << piece << ", " << threads << " threads";
      }
    }
    set_active_tuning(nullptr);
  }
}

// The split the forward runs by, as its callers' models read it (aura prices query_block by it):
// blocks of the window's key columns (window x ceil(64 / window) tokens), the last one partial,
// thread i of T from block i n / T, each block in ceil(len / piece) pieces, a piece at least 1.
TEST(SparseAttention, ForwardSplitIsKeyColumnBlocksInPieces) {
  const SparseAttnForwardSplit a = sparse_attention_forward_split(2048, 64, 4);
  EXPECT_EQ(a.block_tokens, 64);
  EXPECT_EQ(a.blocks, 32);
  EXPECT_EQ(a.pieces(), 512);
  EXPECT_EQ(a.first_block(0, 2), 0);
  EXPECT_EQ(a.first_block(1, 2), 16);
  // Window 20: blocks of 20 x ceil(83 / 20) = 80 tokens; 100 tokens are blocks of 80 and 20,
  // ceil(80 / 3) + ceil(20 / 3) = 27 + 7 pieces; query_block 0 is read as 1.
  const SparseAttnForwardSplit b = sparse_attention_forward_split(100, 20, 3);
  EXPECT_EQ(b.block_tokens, 80);
  EXPECT_EQ(b.blocks, 2);
  EXPECT_EQ(b.block_end(1), 100);
  EXPECT_EQ(b.pieces(), 34);
  EXPECT_EQ(sparse_attention_forward_split(100, 20, 0).pieces(), 100);
  EXPECT_EQ(sparse_attention_forward_split(100, 128, 200).block_tokens, 128);  // one block
  EXPECT_EQ(sparse_attention_forward_split(100, 128, 200).pieces(), 1);
  EXPECT_EQ(sparse_attention_forward_split(0, 64, 4).pieces(), 0);
}

// One thread's block order (SparseAttnForwardWalk, which the kernel walks and aura's model plays
// out): two threads over 5 blocks, claims in the model's order (every first block, then every
// block after). Thread 0 starts at block 0, thread 1 at 5 / 2 = 2; each claims the next free block
// upward as it starts one; with none left, a thread helps the blocks after its last own one.
TEST(SparseAttention, ForwardWalkClaimsUpwardThenHelpsFromItsLastBlock) {
  const SparseAttnForwardSplit sp = sparse_attention_forward_split(5 * 64, 64, 4);
  ASSERT_EQ(sp.blocks, 5);
  std::vector<char> claimed(5, 0);
  auto claim = [&](int64_t from) {
    for (int64_t i = 0; i < 5; ++i)
      if (const int64_t b = (from + i) % 5; !claimed[size_t(b)]) {
        claimed[size_t(b)] = 1;
        return b;
      }
    return int64_t(5);
  };
  SparseAttnForwardWalk w0(5), w1(5);
  w0.begin(sp, 0, 2, claim);
  w1.begin(sp, 1, 2, claim);
  w0.claim_after(claim);  // block 1
  w1.claim_after(claim);  // block 3
  EXPECT_EQ(w0.block(), 0);
  EXPECT_EQ(w0.next_own(), 1);
  EXPECT_EQ(w1.block(), 2);
  EXPECT_EQ(w1.next_own(), 3);
  w0.next(claim);  // runs 1, claims 4
  EXPECT_EQ(w0.block(), 1);
  EXPECT_EQ(w0.next_own(), 4);
  w1.next(claim);  // runs 3, nothing left to claim
  EXPECT_EQ(w1.block(), 3);
  EXPECT_EQ(w1.next_own(), 5);
  std::vector<int64_t> order0, order1;
  for (int64_t b = w0.block(); b < 5; w0.next(claim), b = w0.block()) order0.push_back(b);
  for (int64_t b = w1.block(); b < 5; w1.next(claim), b = w1.block()) order1.push_back(b);
  // Thread 0: own 1, 4, then helps 0, 1, 2, 3, 4 (after its last own block, 4); thread 1: own 3,
  // then helps 4, 0, 1, 2, 3.
  EXPECT_EQ(order0, (std::vector<int64_t>{1, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(order1, (std::vector<int64_t>{3, 4, 0, 1, 2, 3}));
  // No blocks: the walk is done at once.
  SparseAttnForwardWalk none(0);
  none.begin(sparse_attention_forward_split(0, 64, 4), 0, 2, claim);
  none.claim_after(claim);
  EXPECT_EQ(none.block(), 0);
}

// The backward's chunk count (sparse_attention.bwd `chunks`) changes only the order of the
// chunk partials' sums: under every legal value it matches the reference, it is bit-identical
// for 1-3 threads, and it stays inside the workspace sparse_attention_backward_workspace()
// gave with no tuning active (sentinels past the end stay untouched; the ASan stage checks the
// same from the other side).
TEST(SparseAttention, BackwardUnderEveryChunkCountFitsTheWorkspaceAndMatches) {
  struct Restore {
    ~Restore() { set_active_tuning(nullptr); }
  } restore;
  set_active_tuning(nullptr);
  // s 100, window 1: 9 chunks of 12 tokens would need more than the built-in 15 of 7 (the
  // backward then keeps the built-in plan).
  for (AttnCase c : {AttnCase{45, 2, 24, 8, 4, 5}, AttnCase{100, 1, 8, 1, 0, 0},
                     AttnCase{300, 2, 8, 16, 128, 0}}) {
    Problem<float> p = make_problem<float>(c, 31, 0);
    const SparseAttnShape& sh = p.sh;
    const size_t no = static_cast<size_t>(sh.s * sh.heads * sh.hd);
    const int64_t ws_floats = sparse_attention_backward_workspace(sh);
    std::vector<float> o(no), lse(static_cast<size_t>(sh.s * sh.heads));
    core::ThreadPool pool2(2);
    sparse_attention_forward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(), p.sink.data(),
                             o.data(), lse.data(), nullptr, sh, &pool2);
    std::vector<float> dqr(no), dkvr(p.kv.size()), dkcr(p.kc.size());
    std::vector<float> dsr(static_cast<size_t>(sh.heads));
    sparse_attention_backward_ref(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(),
                                  p.sink.data(), lse.data(), p.d_o.data(), dqr.data(),
                                  dkvr.data(), dkcr.data(), dsr.data(), sh, &pool2);
    for (int64_t chunks = 1; chunks <= 16; ++chunks) {
      auto t = std::make_shared<Tuning>();
      t->set("sparse_attention.bwd", "*", {{"chunks", chunks}});
      set_active_tuning(t);
      const std::string tag = "s " + std::to_string(sh.s) + " window " +
                              std::to_string(sh.window) + " chunks " + std::to_string(chunks);
      EXPECT_EQ(sparse_attention_backward_workspace(sh), ws_floats) << tag;
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        core::ThreadPool pool(threads);
        const float kSentinel = 12345.f;
        std::vector<float> ws(static_cast<size_t>(ws_floats) + 64, kSentinel);
        std::vector<float> dq(no, NAN), dkv(p.kv.size(), NAN), dkc(p.kc.size(), NAN);
        std::vector<float> ds(static_cast<size_t>(sh.heads), NAN);
        sparse_attention_backward(p.q.data(), p.kv.data(), p.kc.data(), p.idx.data(),
                                  p.sink.data(), lse.data(), p.d_o.data(), dq.data(),
                                  dkv.data(), dkc.data(), ds.data(), sh, ws.data(), &pool);
        for (size_t i = size_t(ws_floats); i < ws.size(); ++i)
          ASSERT_EQ(ws[i], kSentinel) << tag << ": wrote past the workspace";
        std::vector<float> all = dq;
        for (const auto* v : {&dkv, &dkc, &ds}) all.insert(all.end(), v->begin(), v->end());
        if (first.empty()) {
          first = all;
          expect_close(dq, dqr, 1e-4, tag + " dq");
          expect_close(dkv, dkvr, 1e-4, tag + " dkv");
          expect_close(dkc, dkcr, 1e-4, tag + " dkv_comp");
          expect_close(ds, dsr, 1e-4, tag + " dsink");
        } else {
          EXPECT_TRUE(same_bytes(all, first)) << tag << ", " << threads << " threads";
        }
      }
    }
    set_active_tuning(nullptr);
  }
}

}  // namespace
}  // namespace trex::kernels
