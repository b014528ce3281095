// accuracy_fp64_bf16: accuracy_fp64.cc with bf16 storage: inputs rounded to bf16, the fp64 evaluation
// from their bf16 values (the exact gradient of the stored inputs); dq is bf16, dsink fp32.
#include <cmath>
#include <cstdio>
#include <random>
#include <algorithm>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#define kernels kernels_old
#include "/tmp/attn21/main/src/trex/kernels/sparse_attention.h"
#undef kernels
namespace k = trex::kernels; namespace ko = trex::kernels_old;
std::vector<float> rv(int64_t n, uint32_t seed, int dist, float scale = 1.f) {
  std::mt19937 rng(seed); std::normal_distribution<float> nd(0.f, 1.f); std::uniform_real_distribution<float> ud(0.f, 1.f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) { float x = nd(rng); if (dist == 1) x = 6.f * ud(rng) - 3.f; if (dist == 2) x = x / std::sqrt(std::max(ud(rng), 1e-3f)); v[i] = x * scale; }
  return v;
}
std::vector<int32_t> random_topk(int64_t s, int64_t kk, int ratio, uint32_t seed) {
  std::mt19937 rng(seed); std::vector<int32_t> idx(s * kk, -1);
  for (int64_t t = 0; t < s; ++t) { int64_t v = (t + 1) / ratio; std::vector<int32_t> all(v); for (int64_t i = 0; i < v; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng); for (int64_t c = 0; c < std::min(kk, v); ++c) idx[t * kk + c] = all[c]; }
  return idx;
}
using B = trex::core::bf16;
std::vector<B> tb(const std::vector<float>& v) { std::vector<B> r(v.size()); for (size_t i = 0; i < v.size(); ++i) r[i] = trex::core::to_bf16(v[i]); return r; }
std::vector<float> tf(const std::vector<B>& v) { std::vector<float> r(v.size()); for (size_t i = 0; i < v.size(); ++i) r[i] = trex::core::to_float(v[i]); return r; }
int main(int argc, char** argv) {
  int64_t S = atoi(argv[1]), H = atoi(argv[2]), hd = atoi(argv[3]), win = atoi(argv[4]); int ratio = atoi(argv[5]); int64_t kk = atoi(argv[6]); uint32_t seed = atoi(argv[7]); int dist = atoi(argv[8]);
  trex::core::ThreadPool pool(2);
  k::SparseAttnShape sh; sh.s = S; sh.heads = H; sh.hd = hd; sh.window = win; sh.n_comp = ratio ? S / ratio : 0;
  std::vector<int32_t> idx;
  if (ratio == 4) { sh.k_comp = kk; idx = random_topk(S, kk, 4, seed + 5); } else if (ratio == 128) idx = k::sparse_attention_dense_index(S, 128, sh.n_comp, &sh.k_comp);
  auto qb = tb(rv(S * H * hd, seed, dist, 1.5f)), kvb = tb(rv(S * hd, seed + 1, dist)), kcb = tb(rv(sh.n_comp * hd, seed + 2, dist)), d_ob = tb(rv(S * H * hd, seed + 3, 0)); auto sink = rv(H, seed + 4, 0);
  auto q = tf(qb), kv = tf(kvb), kc = tf(kcb), d_o = tf(d_ob);
  ko::SparseAttnShape osh; osh.s = S; osh.heads = H; osh.hd = hd; osh.window = win; osh.n_comp = sh.n_comp; osh.k_comp = sh.k_comp;
  std::vector<B> ob(S * H * hd); std::vector<float> lse(S * H);
  k::sparse_attention_forward(qb.data(), kvb.data(), kcb.data(), idx.data(), sink.data(), ob.data(), lse.data(), nullptr, sh, &pool);
  std::vector<B> dqb(ob.size()), dkvb(kv.size()), dkcb(kc.size()), dqb2 = dqb, dkvb2 = dkvb, dkcb2 = dkcb, dqb3 = dqb, dkvb3 = dkvb, dkcb3 = dkcb;
  std::vector<float> ds(H), ds2 = ds, ds3 = ds;
  k::sparse_attention_backward(qb.data(), kvb.data(), kcb.data(), idx.data(), sink.data(), lse.data(), d_ob.data(), dqb.data(), dkvb.data(), dkcb.data(), ds.data(), sh, nullptr, &pool);
  ko::sparse_attention_backward(qb.data(), kvb.data(), kcb.data(), idx.data(), sink.data(), ob.data(), lse.data(), d_ob.data(), dqb2.data(), dkvb2.data(), dkcb2.data(), ds2.data(), osh, nullptr, &pool);
  k::sparse_attention_backward_ref(qb.data(), kvb.data(), kcb.data(), idx.data(), sink.data(), lse.data(), d_ob.data(), dqb3.data(), dkvb3.data(), dkcb3.data(), ds3.data(), sh, &pool);
  auto o = tf(ob), dq = tf(dqb), dkv = tf(dkvb), dkc = tf(dkcb), dq2 = tf(dqb2), dkv2 = tf(dkvb2), dkc2 = tf(dkcb2), dq3 = tf(dqb3), dkv3 = tf(dkvb3), dkc3 = tf(dkcb3);
  // fp64
  std::vector<double> xdq(o.size(), 0), xdkv(kv.size(), 0), xdkc(kc.size(), 0), xds(H, 0);
  const double tau = 1.0 / std::sqrt(double(hd));
  for (int64_t t = 0; t < S; ++t) {
    std::vector<const float*> keys; std::vector<double*> dk;
    for (int64_t j = std::max<int64_t>(0, t - win + 1); j <= t; ++j) keys.push_back(&kv[j * hd]), dk.push_back(&xdkv[j * hd]);
    for (int64_t c = 0; c < sh.k_comp; ++c) { int32_t i = idx[t * sh.k_comp + c]; if (i >= 0) keys.push_back(&kc[i * hd]), dk.push_back(&xdkc[i * hd]); }
    size_t n = keys.size();
    for (int64_t h = 0; h < H; ++h) {
      const float* qv = &q[(t * H + h) * hd]; const float* dov = &d_o[(t * H + h) * hd];
      std::vector<double> s(n), p(n), dp(n);
      double M = sink[h];
      for (size_t j = 0; j < n; ++j) { double a = 0; for (int64_t e = 0; e < hd; ++e) a += double(qv[e]) * keys[j][e]; s[j] = tau * a; M = std::max(M, s[j]); }
      double Z = std::exp(sink[h] - M); for (size_t j = 0; j < n; ++j) Z += std::exp(s[j] - M);
      double D = 0;
      for (size_t j = 0; j < n; ++j) { p[j] = std::exp(s[j] - M) / Z; double a = 0; for (int64_t e = 0; e < hd; ++e) a += double(dov[e]) * keys[j][e]; dp[j] = a; D += p[j] * dp[j]; }
      for (size_t j = 0; j < n; ++j) { double dsj = p[j] * (dp[j] - D);
        for (int64_t e = 0; e < hd; ++e) { xdq[(t * H + h) * hd + e] += tau * dsj * keys[j][e]; dk[j][e] += tau * dsj * qv[e] + p[j] * dov[e]; } }
      xds[h] -= std::exp(sink[h] - M) / Z * D;
    }
  }
  auto err = [](const char* nm, const std::vector<float>& a, const std::vector<double>& x) {
    double mx = 0, sum = 0; int64_t beyond = 0;
    for (size_t i = 0; i < a.size(); ++i) { double d = std::fabs(a[i] - x[i]); mx = std::max(mx, d); sum += d; beyond += d > 1e-2 * (1 + std::fabs(x[i])); }
    std::printf("  %-10s max %.3g mean %.3g beyond-1e-2 %lld\n", nm, mx, sum / a.size(), (long long)beyond);
  };
  std::printf("bf16 case s %lld H %lld hd %lld win %lld ratio %d k %lld seed %u dist %d\n", (long long)S, (long long)H, (long long)hd, (long long)win, ratio, (long long)kk, seed, dist);
  std::printf(" dq:\n"); err("new", dq, xdq); err("main", dq2, xdq); err("ref", dq3, xdq);
  std::printf(" dkv:\n"); err("new", dkv, xdkv); err("main", dkv2, xdkv); err("ref", dkv3, xdkv);
  std::printf(" dkv_comp:\n"); err("new", dkc, xdkc); err("main", dkc2, xdkc); err("ref", dkc3, xdkc);
  std::printf(" dsink:\n"); err("new", ds, xds); err("main", ds2, xds); err("ref", ds3, xds);
}
