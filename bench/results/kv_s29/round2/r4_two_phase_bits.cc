#include <cstdio>
#include <cstdint>
#include <cmath>
#include <random>
#include <vector>
#include "trex/kernels/kv_compressor.h"
namespace trex::kernels { void kv_r4_phases_set(bool on); }
using namespace trex;
int main(int argc, char** argv) {
  const int64_t shapes[][2] = {{4096, 512}, {3001, 520}, {9000, 129}, {16384, 128}, {2500, 1000}};
  FILE* f = std::fopen(argv[1], "wb"); trex::kernels::kv_r4_phases_set(argv[2][0] == '1');
  for (int threads : {1, 2}) {
    core::ThreadPool pool(threads);
    for (auto& sh : shapes) {
      int64_t s = sh[0], hd = sh[1], C = kernels::compressor_width(4, hd), n = kernels::compressor_entries(s, 4);
      std::mt19937 g(s + hd);
      std::normal_distribution<float> d(0.f, 2.f);
      std::vector<float> kt(s * C), zt(s * C), ape(4 * C), k(n * hd);
      for (auto& x : kt) x = d(g);
      for (auto& x : zt) x = d(g);
      for (auto& x : ape) x = 0.25f * d(g);
      if (hd == 129) { zt[5 * C + 3] = INFINITY; zt[100 * C + 7] = NAN; zt[200 * C + 9] = -INFINITY; kt[300*C+1]=NAN; }
      kernels::kv_compress_forward(kt.data(), zt.data(), ape.data(), k.data(), s, hd, 4, &pool);
      std::fwrite(k.data(), 4, k.size(), f);
    }
  }
  std::fclose(f);
}
