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
  auto f = [&] { k::sparse_attention_forward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), ratio == 4 ? cp.data() : nullptr, sh, &pool); };
  auto b = [&] { k::sparse_attention_backward(q.data(), kv.data(), kc.data(), ip, sink.data(), o.data(), lse.data(), d_o.data(), dq.data(), dkv.data(), dkc.data(), ds.data(), sh, ws.data(), &pool); };
  f(); if (bwd) b();
  std::vector<double> cs, ws_;
  for (int r = 0; r < rounds; ++r) {
    double c0 = cpu(), w0 = wall();
    for (int i = 0; i < reps; ++i) bwd ? b() : f();
    cs.push_back((cpu() - c0) / reps); ws_.push_back((wall() - w0) / reps);
  }
  std::sort(cs.begin(), cs.end()); std::sort(ws_.begin(), ws_.end());
  double fl = (bwd ? 10.0 : 4.0) * H * hd * pairs;
  std::printf("%s ratio %d threads %d: cpu %.3f ms (%.1f GFLOP/s per CPU s), wall %.3f ms; checksum %.6g\n", argv[1], ratio, threads,
              cs[cs.size() / 2] * 1e3, fl / cs[cs.size() / 2] / 1e9, ws_[ws_.size() / 2] * 1e3, double(bwd ? dq[12345] + dkv[777] : o[12345] + lse[99]));
}
