// One-off (session 18): build from the build folder with
//   g++ -O2 -std=c++20 -I../src -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 ../bench/results/aura_s18/scripts/lookup_cost.cc \
//     -o lookup_cost libtrex_kernels.a libtrex_core.a libtrex_util.a -ltomlplusplus -lpthread
//   ./lookup_cost ../bench/results/aura_s18/ab_processes/empty_tuning.toml ../bench/results/aura_s17/loop/tuning_s17.toml
// Cost of one tuning lookup per kernel call: gemm_blocking_for with no tuning active, with a file
// of no entries, and with session 17's file (a class it has and one it does not).
#include <chrono>
#include <cstdio>
#include <memory>
#include "trex/kernels/gemm.h"
#include "trex/kernels/tuning.h"
using namespace trex::kernels;
double per_call(int64_t m, int64_t n, int64_t k) {
  const int N = 2000000; int64_t sink = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < N; ++i) sink += gemm_blocking_for(m, n, k).mc;
  if (sink == 42) std::printf(" ");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / N * 1e9;
}
int main(int argc, char** argv) {
  std::printf("none: %.1f ns\n", per_call(64, 64, 8));
  set_active_tuning(std::make_shared<const Tuning>(Tuning::load(argv[1])));
  std::printf("empty file: %.1f ns\n", per_call(64, 64, 8));
  set_active_tuning(std::make_shared<const Tuning>(Tuning::load(argv[2])));
  std::printf("s17 file, class absent: %.1f ns\n", per_call(64, 64, 8));
  std::printf("s17 file, class present: %.1f ns\n", per_call(8192, 512, 512));
}
