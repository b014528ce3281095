// driver: sparse attention fwd/bwd at the step shape; prints CPU ms per call (median of rounds)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <time.h>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#define kernels kernels_old
#include "/tmp/attn/old/src/trex/kernels/sparse_attention.h"
#undef kernels
namespace ko = trex::kernels_old;
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
int main(int argc, char** argv) {
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
  ko::SparseAttnShape osh; osh.s = sh.s; osh.heads = sh.heads; osh.hd = sh.hd; osh.window = sh.window; osh.n_comp = sh.n_comp; osh.k_comp = sh.k_comp;
  FV o2(o.size()), lse2(lse.size()), dq2(dq.size()), dkv2(dkv.size()), dkc2(dkc.size()), ds2(H), cp2(cp.size());
  auto f = [&] { k::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), ratio == 4 ? cp.data() : nullptr, sh, &pool); };
  auto b = [&] { k::sparse_attention_backward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), d_o.data(), dq.data(), dkv.data(), dkc.data(), ds.data(), sh, ws.data(), &pool); };
  auto fo = [&] { ko::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), o2.data(), lse2.data(), ratio == 4 ? cp2.data() : nullptr, osh, &pool); };
  auto bo = [&] { ko::sparse_attention_backward(q.data(), kv.data(), kc.data(), ip, sink.data(), o2.data(), lse2.data(), d_o.data(), dq2.data(), dkv2.data(), dkc2.data(), ds2.data(), osh, ws.data(), &pool); };
  f(); fo(); if (bwd) { b(); bo(); }
  auto same = [](const FV& a, const FV& b) { return std::memcmp(a.data(), b.data(), a.size() * 4) == 0; };
  bool eq = same(o, o2) && same(lse, lse2) && same(cp, cp2) && (!bwd || (same(dq, dq2) && same(dkv, dkv2) && same(dkc, dkc2) && same(ds, ds2)));
  std::vector<double> cn, co, rat, wrat;
  for (int r = 0; r < rounds; ++r) {
    double c0 = cpu(), w0 = wall();
    for (int i = 0; i < reps; ++i) bwd ? b() : f();
    double c1 = cpu(), w1 = wall();
    for (int i = 0; i < reps; ++i) bwd ? bo() : fo();
    double c2 = cpu(), w2 = wall();
    cn.push_back((c1 - c0) / reps); co.push_back((c2 - c1) / reps); rat.push_back((c2 - c1) / (c1 - c0));
    wrat.push_back((w2 - w1) / (w1 - w0));
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  double fl = (bwd ? 10.0 : 4.0) * H * hd * pairs;
  std::printf("%s ratio %d threads %d: old %.3f new %.3f ms CPU (%.1f -> %.1f GFLOP/s per CPU s), old/new median %.3f [", argv[1], ratio, threads,
              med(co) * 1e3, med(cn) * 1e3, fl / med(co) / 1e9, fl / med(cn) / 1e9, med(rat));
  for (double x : rat) std::printf(" %.3f", x);
  std::printf(" ] wall old/new median %.3f; same bits %s\n", med(wrat), eq ? "yes" : "NO");
}
