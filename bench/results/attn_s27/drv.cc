// One process: config A and B alternate per round (order swapped each round); a config is
// (threads, variant). CPU time of the process per call; medians over rounds of A/B.
// drv fwd|bwd RATIO REPS ROUNDS THREADS_A IMPL_A THREADS_B IMPL_B (impl 0: the base kernel (mk.sh: main 08d4e22; mk2.sh: any), built
// with its names renamed *_main; 1: the worktree's). Session 24 (attn), from session 23's drv.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <time.h>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/core/aligned_vector.h"
namespace trex::kernels {
template <class T> void sparse_attention_forward_main(const T*, const T*, const T*, const int32_t*, const float*, T*, float*, float*, const SparseAttnShape&, core::ThreadPool*);
template <class T> void sparse_attention_backward_main(const T*, const T*, const T*, const int32_t*, const float*, const float*, const T*, T*, T*, T*, float*, const SparseAttnShape&, float*, core::ThreadPool*);
}
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
  if (argc < 9) { std::fprintf(stderr, "drv fwd|bwd ratio reps rounds thrA varA thrB varB\n"); return 2; }
  bool bwd = !std::strcmp(argv[1], "bwd"); int ratio = atoi(argv[2]), reps = atoi(argv[3]), rounds = atoi(argv[4]);
  int thr[2] = {atoi(argv[5]), atoi(argv[7])}, var[2] = {atoi(argv[6]), atoi(argv[8])};
  std::unique_ptr<trex::core::ThreadPool> pools[2];
  pools[0] = std::make_unique<trex::core::ThreadPool>(thr[0]);
  pools[1] = thr[1] == thr[0] ? nullptr : std::make_unique<trex::core::ThreadPool>(thr[1]);
  auto pool = [&](int c) { return c == 1 && pools[1] ? pools[1].get() : pools[0].get(); };
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
  FV o2 = o, lse2 = lse, cp2 = cp, dq2 = dq, dkv2 = dkv, dkc2 = dkc, ds2 = ds;
  FV ws(std::max<int64_t>(1, k::sparse_attention_backward_workspace(sh)));
  double pairs = 0;
  for (int64_t t = 0; t < s; ++t) { pairs += std::min<int64_t>(64, t + 1); for (int64_t c = 0; c < sh.k_comp; ++c) pairs += idx[t * sh.k_comp + c] >= 0; }
  const int32_t* ip = idx.empty() ? nullptr : idx.data();
  auto run = [&](int c, bool second) {
    FV& O = second ? o2 : o; FV& L = second ? lse2 : lse; FV& C = second ? cp2 : cp;
    if (!bwd && var[c] == 0) { k::sparse_attention_forward_main(q.data(), kv.data(), kc.data(), ip, sink.data(), O.data(), L.data(), ratio == 4 ? C.data() : nullptr, sh, pool(c)); return; }
    if (bwd && var[c] == 0) { k::sparse_attention_backward_main(q.data(), kv.data(), kc.data(), ip, sink.data(), lse.data(), d_o.data(), (second ? dq2 : dq).data(), (second ? dkv2 : dkv).data(), (second ? dkc2 : dkc).data(), (second ? ds2 : ds).data(), sh, ws.data(), pool(c)); return; }
    if (!bwd) { k::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), O.data(), L.data(), ratio == 4 ? C.data() : nullptr, sh, pool(c)); return; }
    k::sparse_attention_backward(q.data(), kv.data(), kc.data(), ip, sink.data(), lse.data(), d_o.data(), (second ? dq2 : dq).data(), (second ? dkv2 : dkv).data(), (second ? dkc2 : dkc).data(), (second ? ds2 : ds).data(), sh, ws.data(), pool(c));
  };
  k::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), ratio == 4 ? cp.data() : nullptr, sh, pools[0].get());
  run(0, false); run(1, true);
  auto same = [](const FV& a, const FV& b) { return std::memcmp(a.data(), b.data(), a.size() * 4) == 0; };
  bool eq = bwd ? same(dq, dq2) && same(dkv, dkv2) && same(dkc, dkc2) && same(ds, ds2) : same(o, o2) && same(lse, lse2) && same(cp, cp2);
  if (rounds < 0) {  // profile config B only
    for (int i = 0; i < reps; ++i) run(1, false);
    return 0;
  }
  std::vector<double> c0s, c1s, rat, wrat, w0s, w1s;
  for (int r = 0; r < rounds; ++r) {
    bool swap = r & 1;
    double t[2], w[2];
    for (int p = 0; p < 2; ++p) {
      int c = p ^ swap;
      double a = cpu(), b = wall();
      for (int i = 0; i < reps; ++i) run(c, false);
      t[c] = cpu() - a; w[c] = wall() - b;
    }
    c0s.push_back(t[0] / reps); c1s.push_back(t[1] / reps); rat.push_back(t[0] / t[1]); wrat.push_back(w[0] / w[1]); w0s.push_back(w[0] / reps); w1s.push_back(w[1] / reps);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  int wins = 0; for (double x : rat) wins += x > 1;
  double fl = (bwd ? 10.0 : 4.0) * H * hd * pairs;
  std::printf("%s r%d A(thr %d var %d) %.3f ms CPU, B(thr %d var %d) %.3f ms (%.1f -> %.1f GFLOP/s per CPU s), A/B median %.3f (%d of %d B faster) [",
              argv[1], ratio, thr[0], var[0], med(c0s) * 1e3, thr[1], var[1], med(c1s) * 1e3, fl / med(c0s) / 1e9, fl / med(c1s) / 1e9, med(rat), wins, rounds);
  for (double x : rat) std::printf(" %.3f", x);
  std::printf(" ] wall A/B median %.3f (A %.3f ms, B %.3f ms wall); same bits %s\n", med(wrat), med(w0s) * 1e3, med(w1s) * 1e3, eq ? "yes" : "NO");
}
