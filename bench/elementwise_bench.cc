// Memory-bound fused kernels (RMSNorm, limited SwiGLU, unified RoPE) against their eager
// reference chains, side by side at [8192, 4096] in fp32 and bf16, forward and forward+backward.
//
// bytes_per_second counts the minimum traffic of the operation, the same for fused and reference
// (so it is "effective" bandwidth, comparable with the probed STREAM triad):
//   RMSNorm  fwd: read x, write y (2 tensors);  fwd+bwd: + read x, dy, write dx (5 tensors)
//   SwiGLU   fwd: read g, u, write out (3);      fwd+bwd: + read g, u, dh, write dg, du (8)
// (the fp32 weight / routing-weight vectors and dw are < 0.1% and not counted).
// Reproduce (medians of 5):
//   ./build-elem/elementwise_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
// Threads: the shared default pool, TREX_THREADS or all CPUs of the affinity mask.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>
#include <type_traits>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/kernels/swiglu.h"

namespace trex::kernels {
namespace {

using core::bf16;

constexpr int64_t kRows = 8192, kCols = 4096, kN = kRows * kCols;

template <class T>
T from(float v) {
  if constexpr (std::is_same_v<T, float>) return v; else return core::to_bf16(v);
}

// An aligned buffer first touched by the pool's threads, filled with values in
// [-scale, scale) from a cheap hash (an RNG would dominate setup at 33M elements).
template <class T>
std::unique_ptr<T[], core::AlignedDeleter> make(int64_t n, uint32_t seed, float scale) {
  auto a = core::aligned_array<T>(size_t(n));
  T* p = a.get();
  core::default_thread_pool().parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      uint32_t h = uint32_t(i) * 2654435761u ^ seed * 40503u;
      h ^= h >> 15;
      h *= 2246822519u;
      h ^= h >> 13;
      p[i] = from<T>(scale * (float(h & 0xffff) / 32768.f - 1.f));
    }
  });
  return a;
}

std::unique_ptr<float[], core::AlignedDeleter> make_w(int64_t n) {
  auto a = core::aligned_array<float>(size_t(n));
  for (int64_t i = 0; i < n; ++i) a[size_t(i)] = 0.5f + float(i % 7) / 7.f;
  return a;
}

void set_bytes(benchmark::State& st, int64_t tensors, size_t elem) {
  st.counters["bytes_per_second"] = benchmark::Counter(
      double(tensors) * double(kN) * double(elem) * double(st.iterations()),
      benchmark::Counter::kIsRate);
}

// range(0): 1 = fused, 0 = reference. range(1): 1 = with backward.
template <class T>
void BM_RmsNorm(benchmark::State& st) {
  bool fused = st.range(0) != 0, bwd = st.range(1) != 0;
  auto x = make<T>(kN, 1, 2.f), dy = make<T>(kN, 2, 1.f), y = make<T>(kN, 3, 0.f);
  auto dx = make<T>(kN, 4, 0.f);
  for (auto _ : st) {
    if (fused) {
      rmsnorm_forward(x.get(), nullptr, y.get(), kRows, kCols, kRmsNormEps);
      if (bwd) rmsnorm_backward(x.get(), nullptr, dy.get(), dx.get(), nullptr, kRows, kCols,
                                kRmsNormEps);
    } else {
      rmsnorm_forward_ref(x.get(), nullptr, y.get(), kRows, kCols, kRmsNormEps);
      if (bwd) rmsnorm_backward_ref(x.get(), nullptr, dy.get(), dx.get(), nullptr, kRows, kCols,
                                    kRmsNormEps);
    }
    benchmark::DoNotOptimize(y.get());
    benchmark::DoNotOptimize(dx.get());
    benchmark::ClobberMemory();
  }
  set_bytes(st, bwd ? 5 : 2, sizeof(T));
}

// Weighted RMSNorm (fused only, for the cost of the weight and the deterministic dw reduction).
template <class T>
void BM_RmsNormWeightedFused(benchmark::State& st) {
  bool bwd = st.range(0) != 0;
  auto x = make<T>(kN, 1, 2.f), dy = make<T>(kN, 2, 1.f), y = make<T>(kN, 3, 0.f);
  auto dx = make<T>(kN, 4, 0.f);
  auto w = make_w(kCols), dw = make_w(kCols);
  for (auto _ : st) {
    rmsnorm_forward(x.get(), w.get(), y.get(), kRows, kCols, kRmsNormEps);
    if (bwd) rmsnorm_backward(x.get(), w.get(), dy.get(), dx.get(), dw.get(), kRows, kCols,
                              kRmsNormEps);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  set_bytes(st, bwd ? 5 : 2, sizeof(T));
}

// Routed limited SwiGLU (per-row routing weight, dw computed).
template <class T>
void BM_Swiglu(benchmark::State& st) {
  bool fused = st.range(0) != 0, bwd = st.range(1) != 0;
  auto g = make<T>(kN, 5, 14.f), u = make<T>(kN, 6, 14.f), dh = make<T>(kN, 7, 1.f);
  auto out = make<T>(kN, 8, 0.f), dg = make<T>(kN, 9, 0.f), du = make<T>(kN, 10, 0.f);
  auto w = make_w(kRows), dw = make_w(kRows);
  for (auto _ : st) {
    if (fused) {
      swiglu_forward(g.get(), u.get(), w.get(), out.get(), kRows, kCols, kSwigluLimit);
      if (bwd) swiglu_backward(g.get(), u.get(), w.get(), dh.get(), dg.get(), du.get(), dw.get(),
                               kRows, kCols, kSwigluLimit);
    } else {
      swiglu_forward_ref(g.get(), u.get(), w.get(), out.get(), kRows, kCols, kSwigluLimit);
      if (bwd) swiglu_backward_ref(g.get(), u.get(), w.get(), dh.get(), dg.get(), du.get(),
                                   dw.get(), kRows, kCols, kSwigluLimit);
    }
    benchmark::DoNotOptimize(out.get());
    benchmark::DoNotOptimize(dg.get());
    benchmark::ClobberMemory();
  }
  set_bytes(st, bwd ? 8 : 3, sizeof(T));
}

// Unified RoPE on [8192 tokens, 8 heads, 512] (V4 head dim 512, rope on the last 64), YaRN table;
// fwd+bwd = forward rotation of x, then the backward (inverse rotation) of dy. Both are out of
// place (the whole row is written), so bytes: fwd 2 tensors, fwd+bwd 4.
template <class T>
void BM_Rope(benchmark::State& st) {
  bool fused = st.range(0) != 0, bwd = st.range(1) != 0;
  const int64_t tokens = kRows, heads = 8, hd = kN / (kRows * heads);
  RopeFreqConfig c;
  c.base = 160000;
  c.yarn = true;
  RopeTable table = rope_table(rope_frequencies(c), tokens);
  std::vector<int64_t> pos(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) pos[size_t(t)] = t;
  auto x = make<T>(kN, 11, 2.f), dy = make<T>(kN, 12, 1.f), y = make<T>(kN, 13, 0.f);
  auto dx = make<T>(kN, 14, 0.f);
  auto apply = fused ? &rope_apply<T> : &rope_apply_ref<T>;
  for (auto _ : st) {
    apply(x.get(), y.get(), pos.data(), tokens, heads, hd, table, 1, nullptr);
    if (bwd) apply(dy.get(), dx.get(), pos.data(), tokens, heads, hd, table, -1, nullptr);
    benchmark::DoNotOptimize(y.get());
    benchmark::DoNotOptimize(dx.get());
    benchmark::ClobberMemory();
  }
  set_bytes(st, bwd ? 4 : 2, sizeof(T));
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"fused", "bwd"});
  for (int bwd : {0, 1})
    for (int fused : {0, 1}) b->Args({fused, bwd});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

BENCHMARK(BM_RmsNorm<float>)->Apply(Args);
BENCHMARK(BM_RmsNorm<bf16>)->Apply(Args);
BENCHMARK(BM_RmsNormWeightedFused<float>)->ArgName("bwd")->Arg(0)->Arg(1)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
BENCHMARK(BM_RmsNormWeightedFused<bf16>)->ArgName("bwd")->Arg(0)->Arg(1)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
BENCHMARK(BM_Swiglu<float>)->Apply(Args);
BENCHMARK(BM_Swiglu<bf16>)->Apply(Args);
BENCHMARK(BM_Rope<float>)->Apply(Args);
BENCHMARK(BM_Rope<bf16>)->Apply(Args);

}  // namespace
}  // namespace trex::kernels

BENCHMARK_MAIN();
