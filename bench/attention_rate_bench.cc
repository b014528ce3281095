// attention_rate_bench: sparse attention forward and backward at the v4-micro step's shapes beside
// trex's sgemm at the step's attention projection shapes, in one run (issue 15's "sparse attention
// at least 80% of the GEMM rate" at kernel level; bench/attention_gemm_ratio.py reads the same
// ratio from a traced step).
//
//   TREX_THREADS=2 build/attention_rate_bench [--rounds N] [--only fwd|bwd]
//
// Shapes (configs/model/v4-micro.toml, one 2048-token document): H 8, hd 128, window 64, fp32;
// ratio 0 (window only), ratio 4 (512 compressed entries, each query's 64 of them in random
// order, as the indexer's top-k: bench-only sets, distinct visible entries), ratio 128 (16
// entries, every visible one). FLOPs as the kernels count them for the trace: 4 H hd per (query,
// key) pair forward, 10 H hd backward. "mix" is the traced step's layer mix: 3 calls of each
// ratio (layers 0-1 and the MTP layer window only, 3 of ratio 4, 3 of ratio 128; the idle trace's
// 0.717 GFLOP per forward call is that mix's mean): its FLOPs over its time. GEMMs: the step's matmul mix (2 M N K FLOPs each):
// the LM head forward and both backward products, a routed expert's products at the mean 256
// rows (w1w3 and w2, forward and both backward products), the shared expert / attn.wo_b shape
// and attn.wq_b forward and backward, each weighted by its calls per step; "GEMM mix" is their
// FLOPs over their time, as `trex profile analyze` rates the step's matmul category.
// Each round times every case once (a case: enough calls for ~40 ms), in a fixed order, so that
// all cases see the same background. Prints, per case, medians over rounds of GFLOP/s by wall
// time and per CPU second (FLOPs over the process's CPU time; the pool's idle threads sleep, so
// it counts work), and for the attention mixes the median over rounds of the ROUND's ratio to the
// round's GEMM mix (the same background for both: on a loaded machine this is the figure to
// compare; issue 15's session 19 notes say how it tracks the near-idle traced step).
// Buffers are 64-byte aligned (aligned_vector), like the model's activations: glibc's 16-byte
// offset split every vector load over two lines (sessions 1-18 of this bench did that).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "trex/core/aligned_vector.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/util/cpu_time.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace k = trex::kernels;
using Buf = trex::core::aligned_vector<float>;

struct Case {
  std::string name;
  double flop = 0;
  std::function<void()> call;
  int reps = 1;
  double weight = 0;          // GEMMs: calls per step in the matmul mix
  std::vector<double> rates;  // GFLOP/s per round, by wall time
  std::vector<double> cpu;    // GFLOP/s per round per thread, by the process's CPU time
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Index sets like the indexer's top-k: min(k, v_t) distinct visible entries, random order.
std::vector<int32_t> topk_sets(int64_t s, int64_t kk, int ratio, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> idx(static_cast<size_t>(s * kk), -1), all;
  for (int64_t t = 0; t < s; ++t) {
    const int64_t v = (t + 1) / ratio;
    all.resize(size_t(v));
    for (int64_t i = 0; i < v; ++i) all[size_t(i)] = int32_t(i);
    for (int64_t c = 0; c < std::min(kk, v); ++c) {
      std::swap(all[size_t(c)], all[size_t(c + int64_t(rng() % uint32_t(v - c)))]);
      idx[size_t(t * kk + c)] = all[size_t(c)];
    }
  }
  return idx;
}

struct Attn {
  k::SparseAttnShape sh;
  Buf q, kv, kc, sink, o, lse, d_o, dq, dkv, dkc, dsink, ws;
  std::vector<int32_t> idx;
  double pairs = 0;
};

void fill(Buf& v, size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  v.resize(n);
  for (float& x : v) x = u(rng);
}

Attn make_attn(int ratio, uint32_t seed) {
  Attn a;
  a.sh.s = 2048, a.sh.heads = 8, a.sh.hd = 128, a.sh.window = 64;
  const int64_t s = a.sh.s, H = a.sh.heads, hd = a.sh.hd;
  a.sh.n_comp = ratio ? s / ratio : 0;
  if (ratio == 4) {
    a.sh.k_comp = 64;
    a.idx = topk_sets(s, 64, 4, seed + 9);
  } else if (ratio == 128) {
    a.idx = k::sparse_attention_dense_index(s, 128, a.sh.n_comp, &a.sh.k_comp);
  }
  std::mt19937 rng(seed);
  fill(a.q, size_t(s * H * hd), rng, 1.5f);
  fill(a.kv, size_t(s * hd), rng, 1.f);
  fill(a.kc, size_t(std::max<int64_t>(1, a.sh.n_comp) * hd), rng, 1.f);
  fill(a.sink, size_t(H), rng, 1.f);
  fill(a.d_o, size_t(s * H * hd), rng, 1.f);
  a.o.resize(size_t(s * H * hd));
  a.lse.resize(size_t(s * H));
  a.dq.resize(size_t(s * H * hd));
  a.dkv.resize(size_t(s * hd));
  a.dkc.resize(a.kc.size());
  a.dsink.resize(size_t(H));
  a.ws.resize(size_t(std::max<int64_t>(1, k::sparse_attention_backward_workspace(a.sh))));
  for (int64_t t = 0; t < s; ++t) {
    a.pairs += double(std::min<int64_t>(a.sh.window, t + 1));
    for (int64_t c = 0; c < a.sh.k_comp; ++c) a.pairs += a.idx[size_t(t * a.sh.k_comp + c)] >= 0;
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      rounds = 0;
      break;
    }
  }
  if (rounds < 1 || (!only.empty() && only != "fwd" && only != "bwd")) {
    std::fprintf(stderr, "usage: attention_rate_bench [--rounds N >= 1] [--only fwd|bwd]\n");
    return 2;
  }
  auto& pool = trex::core::default_thread_pool();
  std::printf("threads %d, rounds %d\n", pool.num_threads(), rounds);

  std::vector<Case> cases;
  // The step's GEMMs (v4-micro, T 2048, 8 layers + the MTP layer, 16 routed experts of ~256 rows
  // at top-2): C[m, n] = A B with A [m, k], B [k, n] as the model calls them; weight = calls per
  // step. Together ~80% of the idle step's matmul time (lm_head 24%, experts 29%, the 2048-row
  // projections the rest).
  struct G { const char* name; k::Trans ta, tb; int64_t m, n, kk; double w; };
  const k::Trans N = k::Trans::kNo, T = k::Trans::kYes;
  std::vector<Buf> gbuf;
  for (G g : {G{"gemm lm_head N,T 2048x8192x512", N, T, 2048, 8192, 512, 2},
              G{"gemm lm_head dX N,N 2048x512x8192", N, N, 2048, 512, 8192, 2},
              G{"gemm lm_head dW T,N 8192x512x2048", T, N, 8192, 512, 2048, 2},
              G{"gemm expert w1w3 N,T 256x512x512", N, T, 256, 512, 512, 144},
              G{"gemm expert w2 N,T 256x512x256", N, T, 256, 512, 256, 144},
              G{"gemm expert dh N,N 256x512x512", N, N, 256, 512, 512, 144},
              G{"gemm expert dW1 T,N 512x512x256", T, N, 512, 512, 256, 144},
              G{"gemm expert dx2 N,N 256x256x512", N, N, 256, 256, 512, 144},
              G{"gemm expert dW2 T,N 512x256x256", T, N, 512, 256, 256, 144},
              G{"gemm wo_b/shared N,T 2048x512x512", N, T, 2048, 512, 512, 18},
              G{"gemm wo_b/shared dX N,N 2048x512x512", N, N, 2048, 512, 512, 18},
              G{"gemm wo_b/shared dW T,N 512x512x2048", T, N, 512, 512, 2048, 18},
              G{"gemm attn.wq_b N,T 2048x1024x256", N, T, 2048, 1024, 256, 9},
              G{"gemm attn.wq_b dX N,N 2048x256x1024", N, N, 2048, 256, 1024, 9},
              G{"gemm attn.wq_b dW T,N 1024x256x2048", T, N, 1024, 256, 2048, 9}}) {
    std::mt19937 rng(7);
    gbuf.emplace_back(), fill(gbuf.back(), size_t(g.m * g.kk), rng, 1.f);
    const float* a = gbuf.back().data();
    gbuf.emplace_back(), fill(gbuf.back(), size_t(g.n * g.kk), rng, 1.f);
    const float* b = gbuf.back().data();
    gbuf.emplace_back(size_t(g.m * g.n), 0.f);
    float* c = gbuf.back().data();
    const int64_t lda = g.ta == N ? g.kk : g.m, ldb = g.tb == N ? g.n : g.kk;
    cases.push_back({g.name, 2.0 * double(g.m * g.n * g.kk), [=] {
                       k::sgemm(g.ta, g.tb, g.m, g.n, g.kk, 1.f, a, lda, b, ldb, 0.f, c, g.n);
                     }});
    cases.back().weight = g.w;
  }
  const size_t n_gemm = cases.size();
  std::vector<Attn> attn;
  const int ratios[] = {0, 4, 128};
  for (int r : ratios) attn.push_back(make_attn(r, 11 + uint32_t(r)));
  for (int bwd = 0; bwd < 2; ++bwd) {
    if ((only == "fwd" && bwd) || (only == "bwd" && !bwd)) continue;
    for (size_t i = 0; i < attn.size(); ++i) {
      Attn* a = &attn[i];
      // The backward's lse is the forward's.
      k::sparse_attention_forward(a->q.data(), a->kv.data(), a->kc.data(),
                                  a->idx.empty() ? nullptr : a->idx.data(), a->sink.data(),
                                  a->o.data(), a->lse.data(), nullptr, a->sh);
      const double hd_h = double(a->sh.heads * a->sh.hd);
      std::string name = std::string(bwd ? "attn bwd" : "attn fwd") + " ratio " +
                         std::to_string(ratios[i]);
      if (!bwd)
        cases.push_back({name, 4.0 * hd_h * a->pairs, [a] {
                           k::sparse_attention_forward(
                               a->q.data(), a->kv.data(), a->kc.data(),
                               a->idx.empty() ? nullptr : a->idx.data(), a->sink.data(),
                               a->o.data(), a->lse.data(), nullptr, a->sh);
                         }});
      else
        cases.push_back({name, 10.0 * hd_h * a->pairs, [a] {
                           k::sparse_attention_backward(
                               a->q.data(), a->kv.data(), a->kc.data(),
                               a->idx.empty() ? nullptr : a->idx.data(), a->sink.data(),
                               a->lse.data(), a->d_o.data(), a->dq.data(),
                               a->dkv.data(), a->dkc.data(), a->dsink.data(), a->sh,
                               a->ws.data());
                         }});
    }
  }
  // Calls per timing: ~40 ms from one warm call.
  for (Case& c : cases) {
    c.call();
    auto t0 = Clock::now();
    c.call();
    const double once = std::chrono::duration<double>(Clock::now() - t0).count();
    c.reps = std::max(1, int(0.04 / std::max(once, 1e-6)));
  }
  for (int r = 0; r < rounds; ++r)
    for (Case& c : cases) {
      auto t0 = Clock::now();
      const double c0 = trex::process_cpu_seconds();
      for (int i = 0; i < c.reps; ++i) c.call();
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count() / c.reps;
      const double csec = (trex::process_cpu_seconds() - c0) / c.reps;
      c.rates.push_back(c.flop / sec / 1e9);
      c.cpu.push_back(c.flop / csec / 1e9);
    }
  // Per round: the GEMM mix's rate (FLOPs over time, weighted by calls per step) and each
  // attention mix's; the ratio of the two within the round; medians over rounds.
  auto mix_rate = [&](const std::vector<std::pair<const Case*, double>>& mix, int r, bool cpu) {
    double flop = 0, sec = 0;
    for (auto [c, w] : mix) {
      const double rate = cpu ? c->cpu[size_t(r)] : c->rates[size_t(r)];
      flop += w * c->flop, sec += w * c->flop / (rate * 1e9);
    }
    return flop / sec / 1e9;
  };
  std::vector<std::pair<const Case*, double>> gmix;
  for (size_t i = 0; i < n_gemm; ++i) gmix.push_back({&cases[i], cases[i].weight});
  std::vector<double> gw, gc;
  for (int r = 0; r < rounds; ++r) gw.push_back(mix_rate(gmix, r, false)), gc.push_back(mix_rate(gmix, r, true));
  const double gemm = median(gw), gemm_cpu = median(gc);
  std::printf("%-36s %8s %15s %13s %20s %13s\n", "case (medians)", "wall", "rate", "of GEMM mix",
              "per CPU second", "of GEMM mix");
  for (const Case& c : cases) {
    const double m = median(c.rates), mc = median(c.cpu);
    std::printf("%-36s %5.2f ms %7.1f GFLOP/s %7.3f %13.1f GFLOP/s %7.3f  (wall min %.1f max %.1f)\n",
                c.name.c_str(), c.flop / m / 1e6, m, m / gemm, mc, mc / gemm_cpu,
                *std::min_element(c.rates.begin(), c.rates.end()),
                *std::max_element(c.rates.begin(), c.rates.end()));
  }
  // The step's layer mix: ratio 0 (layers 0-1 and the MTP layer), 4 and 128, 3 calls each.
  const double weight[] = {3, 3, 3};
  for (int bwd = 0; bwd < 2; ++bwd) {
    std::vector<std::pair<const Case*, double>> amix;
    for (size_t i = 0; i < attn.size(); ++i)
      for (const Case& c : cases)
        if (c.name == std::string(bwd ? "attn bwd" : "attn fwd") + " ratio " + std::to_string(ratios[i]))
          amix.push_back({&c, weight[i]});
    if (amix.empty()) continue;
    std::vector<double> aw, ac, rw, rc;
    for (int r = 0; r < rounds; ++r) {
      aw.push_back(mix_rate(amix, r, false)), ac.push_back(mix_rate(amix, r, true));
      rw.push_back(aw.back() / gw[size_t(r)]), rc.push_back(ac.back() / gc[size_t(r)]);
    }
    std::printf("%-36s %7.1f GFLOP/s by wall, %7.1f per CPU s; of the GEMM mix, per round: "
                "wall %.3f (min %.3f max %.3f), CPU %.3f (min %.3f max %.3f)\n",
                bwd ? "attn bwd mix" : "attn fwd mix", median(aw), median(ac), median(rw),
                *std::min_element(rw.begin(), rw.end()), *std::max_element(rw.begin(), rw.end()),
                median(rc), *std::min_element(rc.begin(), rc.end()),
                *std::max_element(rc.begin(), rc.end()));
  }
  std::printf("GEMM mix (medians over rounds) %.1f GFLOP/s by wall, %.1f per CPU second\n", gemm,
              gemm_cpu);
  return 0;
}
