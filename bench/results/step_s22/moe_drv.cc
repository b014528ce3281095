// MoE layer forward+backward at v4-micro's size, T tokens: per-iteration process CPU and wall
// time; the checksum of out, dx and the expert gradients shows both builds give the same bits.
#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "trex/model/config.h"
#include "trex/model/moe.h"
using namespace trex::model;
static double now(clockid_t c) { timespec t; clock_gettime(c, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
  ModelConfig c = load_model_config(argv[1]);
  const int64_t T = atoi(argv[2]); const int iters = atoi(argv[3]);
  const int64_t d = c.hidden, f = c.ffn.expert_hidden; const int E = c.ffn.routed_experts;
  std::mt19937 rng(1); std::normal_distribution<float> nd(0.f, 0.05f);
  auto fill = [&](int64_t n) { std::vector<float> v(static_cast<size_t>(n)); for (auto& x : v) x = nd(rng); return v; };
  std::vector<std::vector<float>> w(3 * (E + 1)), g(3 * (E + 1));
  for (auto& v : w) v = fill(f * d);
  for (auto& v : g) v.assign(size_t(f * d), 0.f);
  auto gate = fill(E * d), dgate = std::vector<float>(size_t(E * d));
  MoeParams p; MoeGrads gr; p.gate = gate.data(); gr.gate = dgate.data();
  for (int e = 0; e <= E; ++e) {
    (e < E ? p.w1 : p.shared_w1).push_back(w[3 * e].data()); (e < E ? p.w2 : p.shared_w2).push_back(w[3 * e + 1].data());
    (e < E ? p.w3 : p.shared_w3).push_back(w[3 * e + 2].data());
    (e < E ? gr.w1 : gr.shared_w1).push_back(g[3 * e].data()); (e < E ? gr.w2 : gr.shared_w2).push_back(g[3 * e + 1].data());
    (e < E ? gr.w3 : gr.shared_w3).push_back(g[3 * e + 2].data());
  }
  std::normal_distribution<float> nx(0.f, 1.f);
  std::vector<float> x(size_t(T * d)), dout(size_t(T * d)), out(size_t(T * d)), dx(size_t(T * d));
  for (auto& v : x) v = nx(rng); for (auto& v : dout) v = nx(rng);
  std::vector<int32_t> ids(static_cast<size_t>(T)); for (auto& v : ids) v = int32_t(rng() % c.vocab);
  MoeLayer layer(c, false); MoeScratch scratch;
  std::vector<double> cpu, wall;
  for (int i = 0; i < iters + 1; ++i) {
    double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
    layer.forward(p, x.data(), ids.data(), T, out.data(), &scratch);
    layer.backward(p, dout.data(), dx.data(), gr, &scratch);
    if (i) { cpu.push_back(now(CLOCK_PROCESS_CPUTIME_ID) - c0); wall.push_back(now(CLOCK_MONOTONIC) - w0); }
  }
  double sum = 0; for (float v : out) sum += v; for (float v : dx) sum += v; for (auto& v : g) for (float u : v) sum += u;
  std::sort(cpu.begin(), cpu.end()); std::sort(wall.begin(), wall.end());
  std::printf("{\"cpu_ms\": %.3f, \"wall_ms\": %.3f, \"checksum\": %.17g}\n", 1e3 * cpu[cpu.size() / 2], 1e3 * wall[wall.size() / 2], sum);
}
