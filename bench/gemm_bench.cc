// trex sgemm against OpenBLAS cblas_sgemm, side by side, on the squares of issue 5 and the
// model's skinny shapes (tokens x N x K), with 1 and 2 threads. Reports GFLOP/s (2*M*N*K per
// call). Both libraries get the same thread count: trex through its own pool, OpenBLAS through
// openblas_set_num_threads. Run with repetitions, randomly interleaved so that both libraries see
// the same background load, and read the medians:
//   build-gemm/gemm_bench --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// Every run ends with a pause outside the timing (settle): see there why.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"

namespace {

struct Operands {
  std::vector<float> a, b, c;
};

Operands make(int64_t m, int64_t n, int64_t k) {
  Operands o;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  o.a.resize(size_t(m * k));
  o.b.resize(size_t(k * n));
  o.c.assign(size_t(m * n), 0.0f);
  for (auto& v : o.a) v = u(rng);
  for (auto& v : o.b) v = u(rng);
  return o;
}

trex::core::ThreadPool& pool(int threads) {
  static trex::core::ThreadPool one(1), two(2);
  return threads == 1 ? one : two;
}

// After each run, before the next one (untimed): OpenBLAS's worker threads keep polling for
// about 100 ms after a call returns (a whole core: 103 ms of CPU time burnt over 200 ms of the
// caller's sleep after a 2-thread 1024^3 call, session 26), so with random interleaving the run
// after an OpenBLAS run shared a core with that poller for its first 100 ms. One process, trex
// 2-thread 2048^3 right after 2-thread OpenBLAS calls: 201 GFLOP/s median (189-209), with a
// 0.3 s pause between them 207 (207-208) (5 rounds, session 26); the 150 ms used here covers the
// ~100 ms of polling measured above, and gemm_bench with it read 1.00-1.04x trex / OpenBLAS on
// the squares (bench/results/gemm_s26 settle_ab_*). trex's pool polls 200 us, so one pause covers
// both libraries; every run gets it alike.
void settle(const benchmark::State&) {
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

void set_counters(benchmark::State& s, int64_t m, int64_t n, int64_t k) {
  s.counters["GFLOPS"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) / 1e9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

void BM_trex_sgemm(benchmark::State& s) {
  const int64_t m = s.range(0), n = s.range(1), k = s.range(2);
  const int threads = int(s.range(3));
  Operands o = make(m, n, k);
  trex::kernels::GemmOptions opt{&pool(threads), nullptr};
  for (auto _ : s) {
    trex::kernels::sgemm(trex::kernels::Trans::kNo, trex::kernels::Trans::kNo, m, n, k, 1.0f,
                         o.a.data(), k, o.b.data(), n, 0.0f, o.c.data(), n, opt);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(s, m, n, k);
}

void BM_openblas_sgemm(benchmark::State& s) {
  const int64_t m = s.range(0), n = s.range(1), k = s.range(2);
  openblas_set_num_threads(int(s.range(3)));
  Operands o = make(m, n, k);
  for (auto _ : s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f,
                o.a.data(), int(k), o.b.data(), int(n), 0.0f, o.c.data(), int(n));
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(s, m, n, k);
}

// Mixed precision: the model's layout, activations [M, K] fp32 times bf16 weights stored [N, K]
// (op(B) = W^T), against the same product with fp32 weights, so the ratio is what bf16 weight
// storage costs or saves. Only the skinny model shapes (see model_shapes).
void BM_trex_sgemm_weights(benchmark::State& s, bool bf16_weights) {
  const int64_t m = s.range(0), n = s.range(1), k = s.range(2);
  const int threads = int(s.range(3));
  Operands o = make(m, n, k);  // o.b is read as [N, K]
  std::vector<trex::core::bf16> b16(o.b.size());
  trex::core::fp32_to_bf16(o.b.data(), b16.data(), o.b.size());
  trex::core::bf16_to_fp32(b16.data(), o.b.data(), o.b.size());  // same values either way
  trex::kernels::GemmOptions opt{&pool(threads), nullptr};
  for (auto _ : s) {
    if (bf16_weights)
      trex::kernels::sgemm(trex::kernels::Trans::kNo, trex::kernels::Trans::kYes, m, n, k, 1.0f,
                           o.a.data(), k, b16.data(), k, 0.0f, o.c.data(), n, opt);
    else
      trex::kernels::sgemm(trex::kernels::Trans::kNo, trex::kernels::Trans::kYes, m, n, k, 1.0f,
                           o.a.data(), k, o.b.data(), k, 0.0f, o.c.data(), n, opt);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(s, m, n, k);
}
void BM_trex_sgemm_fp32_weights(benchmark::State& s) { BM_trex_sgemm_weights(s, false); }
void BM_trex_sgemm_bf16_weights(benchmark::State& s) { BM_trex_sgemm_weights(s, true); }

void model_shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> mnk = {
      {2048, 256, 512}, {2048, 512, 256}, {2048, 8192, 512}, {512, 4096, 256}};
  for (int threads : {1, 2})
    for (const auto& s : mnk) b->Args({s[0], s[1], s[2], threads});
  b->ArgNames({"M", "N", "K", "threads"})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->Teardown(settle);
}

// M x N x K: squares, then the model's tokens x N x K projections.
void shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> mnk = {{1024, 1024, 1024}, {2048, 2048, 2048},
                                                 {4096, 4096, 4096}, {2048, 256, 256},
                                                 {2048, 1024, 256},  {2048, 256, 4096}};
  for (int threads : {1, 2})
    for (const auto& s : mnk) b->Args({s[0], s[1], s[2], threads});
  b->ArgNames({"M", "N", "K", "threads"})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->Teardown(settle);
}

// The v4-micro training step's heavy products as the model calls them (seq 2048, hidden 512,
// vocabulary 8192, 16 experts of width 256 split in 4 blocks of 64, about 256 rows each, top 2):
// M, N, K, op(A) transposed, op(B) transposed, beta, threads. The expert products run one per
// thread in the step (for_each_expert), so their 1-thread rows are the ones that matter.
void BM_model_gemm(benchmark::State& s, bool openblas) {
  const int64_t m = s.range(0), n = s.range(1), k = s.range(2);
  const bool ta = s.range(3) != 0, tb = s.range(4) != 0;
  const float beta = float(s.range(5));
  const int threads = int(s.range(6));
  Operands o = make(m, n, k);
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  using trex::kernels::Trans;
  trex::kernels::GemmOptions opt{&pool(threads), nullptr};
  if (openblas) openblas_set_num_threads(threads);
  for (auto _ : s) {
    if (openblas)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  int(m), int(n), int(k), 1.0f, o.a.data(), int(lda), o.b.data(), int(ldb), beta,
                  o.c.data(), int(n));
    else
      trex::kernels::sgemm(ta ? Trans::kYes : Trans::kNo, tb ? Trans::kYes : Trans::kNo, m, n, k,
                           1.0f, o.a.data(), lda, o.b.data(), ldb, beta, o.c.data(), n, opt);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(s, m, n, k);
}
void BM_trex_model(benchmark::State& s) { BM_model_gemm(s, false); }
void BM_openblas_model(benchmark::State& s) { BM_model_gemm(s, true); }

void step_shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> cases = {
      {256, 64, 512, 0, 1, 0},     // experts w1/w3 forward, one width block
      {256, 512, 64, 0, 1, 0},     // experts w2 forward
      {256, 64, 512, 0, 0, 0},     // experts w2.bwd: dh
      {512, 64, 256, 1, 0, 1},     // experts w2.bwd: dW2 += dY^T h
      {64, 512, 256, 1, 0, 1},     // experts w1w3.bwd: dW1 += dg^T x
      {256, 512, 64, 0, 0, 1},     // experts w1w3.bwd: dx += du W3
      {2048, 256, 512, 0, 1, 0},   // shared expert w1/w3 forward
      {2048, 512, 256, 0, 0, 1},   // shared expert bwd: dx
      {256, 512, 2048, 1, 0, 1},   // shared expert bwd: dW1
      {2048, 8192, 512, 0, 1, 0},  // LM head forward
      {2048, 512, 8192, 0, 0, 0},  // LM head bwd: dx
      {8192, 512, 2048, 1, 0, 1},  // LM head bwd: dW
  };
  for (int threads : {1, 2})
    for (const auto& c : cases) b->Args({c[0], c[1], c[2], c[3], c[4], c[5], threads});
  b->ArgNames({"M", "N", "K", "ta", "tb", "beta", "threads"})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->Teardown(settle);
}

BENCHMARK(BM_trex_sgemm)->Apply(shapes);
BENCHMARK(BM_openblas_sgemm)->Apply(shapes);
BENCHMARK(BM_trex_sgemm_fp32_weights)->Apply(model_shapes);
BENCHMARK(BM_trex_sgemm_bf16_weights)->Apply(model_shapes);
BENCHMARK(BM_trex_model)->Apply(step_shapes);
BENCHMARK(BM_openblas_model)->Apply(step_shapes);

}  // namespace

BENCHMARK_MAIN();
