#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>
#include "trex/kernels/kv_compressor.h"
namespace trex::kernels { void kv_r4_phases_set(bool on); }
using namespace trex;
static double cpu() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  int64_t s = atoi(argv[1]), hd = atoi(argv[2]); int rounds = atoi(argv[3]), calls = atoi(argv[4]);
  core::ThreadPool pool(2);
  int64_t C = kernels::compressor_width(4, hd), n = kernels::compressor_entries(s, 4);
  std::mt19937 g(1); std::normal_distribution<float> d(0.f, 2.f);
  std::vector<float> kt(s * C), zt(s * C), ape(4 * C), k(n * hd);
  for (auto& x : kt) x = d(g); for (auto& x : zt) x = d(g); for (auto& x : ape) x = d(g);
  std::vector<double> cw[2], cc[2]; int wins = 0;
  for (int r = 0; r < rounds; ++r) {
    double tw[2], tc[2];
    for (int q = 0; q < 2; ++q) {
      int v = (r & 1) ? 1 - q : q;
      kernels::kv_r4_phases_set(v == 1 && argc < 6);
      kernels::kv_compress_forward(kt.data(), zt.data(), ape.data(), k.data(), s, hd, 4, &pool);
      double w0 = wall(), c0 = cpu();
      for (int i = 0; i < calls; ++i) kernels::kv_compress_forward(kt.data(), zt.data(), ape.data(), k.data(), s, hd, 4, &pool);
      tw[v] = (wall() - w0) / calls * 1e6; tc[v] = (cpu() - c0) / calls * 1e6;
    }
    for (int v = 0; v < 2; ++v) cw[v].push_back(tw[v]), cc[v].push_back(tc[v]);
    wins += tw[1] < tw[0];
  }
  auto med = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  auto rng = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return std::make_pair(x.front(), x.back()); };
  std::printf("[%ld,%ld] wall us old %.1f (%.1f-%.1f) new %.1f (%.1f-%.1f) ratio old/new %.3f, new faster %d/%d; cpu us old %.1f new %.1f ratio %.3f\n",
    s, hd, med(cw[0]), rng(cw[0]).first, rng(cw[0]).second, med(cw[1]), rng(cw[1]).first, rng(cw[1]).second,
    med(cw[0]) / med(cw[1]), wins, rounds, med(cc[0]), med(cc[1]), med(cc[0]) / med(cc[1]));
}
