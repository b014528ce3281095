// driver: sparse attention fwd/bwd at the step shape; prints CPU ms per call (median of rounds)
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <time.h>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/core/aligned_vector.h"
using FV = trex::core::aligned_vector<float>;
namespace k = trex::kernels;
static double cpu() { timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static double wall() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
std::vector<int32_t> topk_sets(int64_t s, int64_t kk, int ratio, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> idx(size_t(s * kk), -1), all;
  for (int64_t t = 0; t < s; ++t) {
    const int64_t v = (t + 1) / ratio; all.resize(size_t(v));
    for (int64_t i = 0; i < v; ++i) all[size_t(i)] = int32_t(i);
    for (int64_t c = 0; c < std::min(kk, v); ++c) {
      std::swap(all[size_t(c)], all[size_t(c + int64_t(rng() % uint32_t(v - c)))]);
      idx[size_t(t * kk + c)] = all[size_t(c)];
    }
  }
  return idx;
}
void fill(FV& v, size_t n, std::mt19937& rng, float sc) { std::uniform_real_distribution<float> u(-sc, sc); v.resize(n); for (float& x : v) x = u(rng); }
namespace trex::kernels { extern int g_skip, g_grain, g_pf, g_ahead; }
int main(int argc, char** argv) {
  if (getenv("SKIP")) trex::kernels::g_skip = atoi(getenv("SKIP"));
  if (getenv("GRAIN")) trex::kernels::g_grain = atoi(getenv("GRAIN"));
  if (getenv("PF")) trex::kernels::g_pf = atoi(getenv("PF"));
  if (getenv("AHEAD")) trex::kernels::g_ahead = atoi(getenv("AHEAD"));
  if (argc < 5) { std::fprintf(stderr, "drv fwd|bwd ratio reps rounds [threads]\n"); return 2; }
  bool bwd = !std::strcmp(argv[1], "bwd"); int ratio = atoi(argv[2]), reps = atoi(argv[3]), rounds = atoi(argv[4]);
  int threads = argc > 5 ? atoi(argv[5]) : 1;
  trex::core::ThreadPool pool(threads);
  k::SparseAttnShape sh; sh.s = 2048; sh.heads = 8; sh.hd = 128; sh.window = 64;
  int64_t s = sh.s, H = 8, hd = 128; uint32_t seed = 11 + ratio;
  std::vector<int32_t> idx;
  sh.n_comp = ratio ? s / ratio : 0;
  if (ratio == 4) { sh.k_comp = 64; idx = topk_sets(s, 64, 4, seed + 9); }
  else if (ratio == 128) idx = k::sparse_attention_dense_index(s, 128, sh.n_comp, &sh.k_comp);
  std::mt19937 rng(seed);
  FV q, kv, kc, sink, d_o;
  fill(q, s * H * hd, rng, 1.5f); fill(kv, s * hd, rng, 1.f); fill(kc, std::max<int64_t>(1, sh.n_comp) * hd, rng, 1.f);
  fill(sink, H, rng, 1.f); fill(d_o, s * H * hd, rng, 1.f);
  FV o(s * H * hd), lse(s * H), dq(s * H * hd), dkv(s * hd), dkc(kc.size()), ds(H), cp(std::max<int64_t>(1, s * sh.k_comp));
  FV ws(std::max<int64_t>(1, k::sparse_attention_backward_workspace(sh)));
  double pairs = 0;
  for (int64_t t = 0; t < s; ++t) { pairs += std::min<int64_t>(64, t + 1); for (int64_t c = 0; c < sh.k_comp; ++c) pairs += idx[t * sh.k_comp + c] >= 0; }
  const int32_t* ip = idx.empty() ? nullptr : idx.data();
  auto f = [&] { k::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), ratio == 4 ? cp.data() : nullptr, sh, &pool); };
  auto b = [&] { k::sparse_attention_backward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), d_o.data(), dq.data(), dkv.data(), dkc.data(), ds.data(), sh, ws.data(), &pool); };
  f(); if (bwd) b();
  // CONFIGS="skip,grain,pf,ahead;..." each round runs each config once (reps calls)
  std::vector<std::array<int,4>> cfg;
  { std::string c = getenv("CONFIGS") ? getenv("CONFIGS") : "0,0,0,8"; size_t p = 0;
    while (p < c.size()) { size_t e = c.find(';', p); if (e == std::string::npos) e = c.size();
      std::array<int,4> a{}; sscanf(c.substr(p, e - p).c_str(), "%d,%d,%d,%d", &a[0], &a[1], &a[2], &a[3]); cfg.push_back(a); p = e + 1; } }
  std::vector<std::vector<double>> t(cfg.size()), tw(cfg.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t c = 0; c < cfg.size(); ++c) {
      trex::kernels::g_skip = cfg[c][0]; trex::kernels::g_grain = cfg[c][1]; trex::kernels::g_pf = cfg[c][2]; trex::kernels::g_ahead = cfg[c][3];
      double c0 = cpu(), w0 = wall();
      for (int i = 0; i < reps; ++i) bwd ? b() : f();
      t[c].push_back((cpu() - c0) / reps); tw[c].push_back((wall() - w0) / reps);
    }
  for (size_t c = 0; c < cfg.size(); ++c) {
    std::vector<double> v = t[c]; std::sort(v.begin(), v.end());
    std::printf("%s r%d thr %d cfg %d,%d,%d,%d: cpu median %.3f ms, rel to cfg0 %.3f\n", argv[1], ratio, threads, cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3], v[v.size()/2]*1e3, 0.0);
  }
  // per-round ratios to cfg 0
  for (size_t c = 1; c < cfg.size(); ++c) { std::vector<double> v; for (int r = 0; r < rounds; ++r) v.push_back(t[0][r] / t[c][r]); std::sort(v.begin(), v.end()); std::printf("  cfg%zu speedup over cfg0: median %.3f (min %.3f max %.3f)", c, v[v.size()/2], v[0], v.back());
    v.clear(); for (int r = 0; r < rounds; ++r) v.push_back(tw[0][r] / tw[c][r]); std::sort(v.begin(), v.end()); std::printf("; wall: median %.3f\n", v[v.size()/2]); }
  return 0;
}
