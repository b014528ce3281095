// Why 2 threads cost more CPU than 1: per round, in turn (order rotated),
//  (a) one thread alone: the caller runs the forward (pool of 1), its thread CPU time per call;
//  (b) the same while a neighbour thread on the other CPU runs the same forward on its own copy
//      of the inputs in a loop (same kind of traffic on the other core, no shared job split);
//  (c) a pool of 2 threads: process CPU time per call.
// drvc fwd|bwd RATIO REPS ROUNDS
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <time.h>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/core/aligned_vector.h"
#include <atomic>
namespace trex::kernels { extern int attn_experiment; extern std::atomic<int64_t> attn_job_cpu_ns; }
using FV = trex::core::aligned_vector<float>;
namespace k = trex::kernels;
static double pcpu() { timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
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
struct Prob {
  k::SparseAttnShape sh; std::vector<int32_t> idx; FV q, kv, kc, sink, d_o, o, lse, dq, dkv, dkc, ds, ws;
  Prob(int ratio, uint32_t seed) {
    sh.s = 2048; sh.heads = 8; sh.hd = 128; sh.window = 64;
    int64_t s = sh.s, H = 8, hd = 128;
    sh.n_comp = ratio ? s / ratio : 0;
    if (ratio == 4) { sh.k_comp = 64; idx = topk_sets(s, 64, 4, seed + 9); }
    else if (ratio == 128) idx = k::sparse_attention_dense_index(s, 128, sh.n_comp, &sh.k_comp);
    std::mt19937 rng(seed);
    fill(q, s * H * hd, rng, 1.5f); fill(kv, s * hd, rng, 1.f); fill(kc, std::max<int64_t>(1, sh.n_comp) * hd, rng, 1.f);
    fill(sink, H, rng, 1.f); fill(d_o, s * H * hd, rng, 1.f);
    o.resize(s * H * hd); lse.resize(s * H); dq.resize(s * H * hd); dkv.resize(s * hd); dkc.resize(kc.size()); ds.resize(H);
    ws.resize(std::max<int64_t>(1, k::sparse_attention_backward_workspace(sh)));
  }
  void fwd(trex::core::ThreadPool* p) { k::sparse_attention_forward(q.data(), kv.data(), kc.data(), idx.empty() ? nullptr : idx.data(), sink.data(), o.data(), lse.data(), nullptr, sh, p); }
  void bwd(trex::core::ThreadPool* p) { k::sparse_attention_backward(q.data(), kv.data(), kc.data(), idx.empty() ? nullptr : idx.data(), sink.data(), lse.data(), d_o.data(), dq.data(), dkv.data(), dkc.data(), ds.data(), sh, ws.data(), p); }
};
int main(int argc, char** argv) {
  bool bwd = !std::strcmp(argv[1], "bwd"); int ratio = atoi(argv[2]), reps = atoi(argv[3]), rounds = atoi(argv[4]);
  const int var1 = argc > 5 ? atoi(argv[5]) : 0, var2 = argc > 6 ? atoi(argv[6]) : 0;
  trex::core::ThreadPool p1(1), p2(2), pn(1);
  Prob a(ratio, 11 + ratio), b(ratio, 12 + ratio);
  a.fwd(&p1); b.fwd(&pn);
  std::atomic<int> mode{0};  // 0 idle, 1 run, 2 quit
  std::thread nb([&] { for (;;) { int m = mode.load(); if (m == 2) return; if (m == 1) { bwd ? b.bwd(&pn) : b.fwd(&pn); } else std::this_thread::sleep_for(std::chrono::microseconds(200)); } });
  std::vector<double> ra, rb, rc, ja, jc;
  for (int r = 0; r < rounds; ++r) {
    for (int p = 0; p < 3; ++p) {
      int c = (p + r) % 3;
      if (c == 1) { mode = 1; std::this_thread::sleep_for(std::chrono::milliseconds(5)); }
      double t0 = c == 2 ? pcpu() : tcpu();
      const int64_t j0 = k::attn_job_cpu_ns.load();
      k::attn_experiment = c == 2 ? var2 : var1;
      for (int i = 0; i < reps; ++i) bwd ? a.bwd(c == 2 ? &p2 : &p1) : a.fwd(c == 2 ? &p2 : &p1);
      double t = (c == 2 ? pcpu() : tcpu()) - t0;
      if (c == 1) mode = 0;
      if (c != 1) (c == 0 ? ja : jc).push_back(double(k::attn_job_cpu_ns.load() - j0) * 1e-9 / reps);
      (c == 0 ? ra : c == 1 ? rb : rc).push_back(t / reps);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  mode = 2; nb.join();
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::vector<double> rba, rca;
  for (int r = 0; r < rounds; ++r) rba.push_back(rb[r] / ra[r]), rca.push_back(rc[r] / ra[r]);
  std::printf("%s r%d CPU ms per call (medians of %d rounds): 1 thread alone %.3f, 1 thread + neighbour %.3f (x%.3f per round), 2 threads %.3f (x%.3f per round)\n",
              argv[1], ratio, rounds, med(ra) * 1e3, med(rb) * 1e3, med(rba), med(rc) * 1e3, med(rca));
  std::vector<double> rj; for (int r = 0; r < rounds; ++r) rj.push_back(jc[r] / ja[r]);
  std::printf("  inside jobs (thread CPU summed over jobs): 1 thread %.3f ms, 2 threads %.3f ms (x%.3f per round); outside jobs 1 thread %.3f, 2 threads %.3f ms\n",
              med(ja) * 1e3, med(jc) * 1e3, med(rj), (med(ra) - med(ja)) * 1e3, (med(rc) - med(jc)) * 1e3);
}
