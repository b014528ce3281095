// What one forward piece costs (aura prices each at 1 us, carried over from pool jobs): the fp32
// forward at 2048x8x128, ratio 4 (top 64 of the visible entries), one thread, under query_block
// 4 (512 pieces), 64 (32 pieces: one per block) and 1 (2048 pieces, which also breaks the fp32
// token groups of 4), set by a tuning per call, rotated per round; process CPU time per call,
// medians over rounds. piece_cost ROUNDS REPS (session 24, attn round 2).
#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/kernels/tuning.h"
namespace k = trex::kernels;
static double cpu() { timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 15, reps = argc > 2 ? atoi(argv[2]) : 5;
  k::SparseAttnShape sh; sh.s = 2048; sh.heads = 8; sh.hd = 128; sh.window = 64; sh.n_comp = 512; sh.k_comp = 64;
  const int64_t s = sh.s, H = 8, hd = 128;
  std::mt19937 rng(15);
  std::vector<int32_t> idx(size_t(s * 64), -1), all;
  for (int64_t t = 0; t < s; ++t) {  // the top 64 of the (t + 1) / 4 visible entries, drawn at random
    const int64_t v = (t + 1) / 4; all.resize(size_t(v));
    for (int64_t i = 0; i < v; ++i) all[size_t(i)] = int32_t(i);
    for (int64_t c = 0; c < std::min<int64_t>(64, v); ++c) {
      std::swap(all[size_t(c)], all[size_t(c + int64_t(rng() % uint32_t(v - c)))]);
      idx[size_t(t * 64 + c)] = all[size_t(c)];
    }
  }
  std::uniform_real_distribution<float> u(-1, 1);
  auto filled = [&](int64_t n, float sc) { std::vector<float> v(static_cast<size_t>(n)); for (float& x : v) x = sc * u(rng); return v; };
  std::vector<float> q = filled(s * H * hd, 1.5f), kv = filled(s * hd, 1.f), kc = filled(512 * hd, 1.f), sink = filled(H, 1.f);
  std::vector<float> o(static_cast<size_t>(s * H * hd)), lse(static_cast<size_t>(s * H)), cp(static_cast<size_t>(s * 64));
  trex::core::ThreadPool pool(1);
  const int64_t qbs[3] = {4, 64, 1};
  std::shared_ptr<k::Tuning> tun[3];
  for (int i = 0; i < 3; ++i) {
    tun[i] = std::make_shared<k::Tuning>();
    tun[i]->set("sparse_attention.fwd", "*", {{"query_block", qbs[i]}});
  }
  auto run = [&](int i) {
    k::set_active_tuning(tun[i]);
    const double t0 = cpu();
    for (int r = 0; r < reps; ++r)
      k::sparse_attention_forward(q.data(), kv.data(), kc.data(), idx.data(), sink.data(), o.data(), lse.data(), cp.data(), sh, &pool);
    return (cpu() - t0) / reps;
  };
  for (int i = 0; i < 3; ++i) run(i);
  std::vector<double> t[3], d4, d1;
  for (int r = 0; r < rounds; ++r) {
    double x[3];
    for (int j = 0; j < 3; ++j) { const int i = (r + j) % 3; x[i] = run(i); }
    for (int i = 0; i < 3; ++i) t[i].push_back(x[i]);
    d4.push_back((x[0] - x[1]) / double(512 - 32));  // per extra piece, groups intact
    d1.push_back((x[2] - x[1]) / double(2048 - 32));
  }
  k::set_active_tuning(nullptr);
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::printf("CPU ms per call (medians): query_block 64 %.3f, 4 %.3f, 1 %.3f; per extra piece (medians of the rounds' differences): 4 vs 64 %.3f us, 1 vs 64 %.3f us\n",
              med(t[1]) * 1e3, med(t[0]) * 1e3, med(t[2]) * 1e3, med(d4) * 1e6, med(d1) * 1e6);
}
