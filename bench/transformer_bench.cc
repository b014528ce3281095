// One training step of the V4 transformer (forward + backward, no optimizer), fp32 and bf16:
// v4-nano at its sequence length 512 and v4-micro at 2048 (MTP on, as the config says), one
// packed sequence of two documents. Counters: tokens/s, model GFLOP/s by the trex convention
// (3 F_fwd per token, spec section 13, model/accounting.h) and MFU against the all-core fp32
// FMA peak that trex's hardware probe measures at start-up (quick probe).
// Reproduce:
//   TREX_THREADS=2 ./build/transformer_bench --benchmark_min_time=1x --benchmark_repetitions=3
// from the repository root (configs/ is read relative to it), or with TREX_SOURCE_DIR set.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "trex/core/hw_probe.h"
#include "trex/core/thread_pool.h"
#include "trex/model/accounting.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"

namespace {

using namespace trex::model;

double g_peak = 0;  // fp32 FLOP/s, all cores of the pool

Batch bench_batch(const ModelConfig& c, int64_t T) {
  std::mt19937 rng(1);
  Batch b;
  b.tokens = T;
  for (int64_t t = 0; t < T; ++t) b.ids.push_back(int32_t(rng() % uint32_t(c.vocab)));
  for (int64_t t = 0; t < T; ++t) b.targets.push_back(t + 1 < T ? b.ids[size_t(t + 1)] : -1);
  int64_t first = T * 5 / 8;
  b.docs = {DocSpan{0, first}, DocSpan{first, T - first}};
  return b;
}

void BM_TrainStep(benchmark::State& state, const char* file, bool bf16) {
  const char* root = std::getenv("TREX_SOURCE_DIR");
  ModelConfig c = load_model_config(std::string(root ? root : ".") + "/configs/model/" + file);
  int64_t T = c.train_seq_len;
  Transformer m(c, 1);
  if (bf16) m.set_precision(Precision::kBf16);
  Batch b = bench_batch(c, T);
  m.forward_backward(b);  // sizes the buffers
  for (auto _ : state) {
    m.zero_grads();
    LossStats s = m.forward_backward(b);
    benchmark::DoNotOptimize(s.ce_sum);
  }
  double flops = training_flops_per_token(c, T, FlopConvention::kTrex, m.mtp_enabled()) * double(T);
  state.counters["tokens/s"] = benchmark::Counter(double(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = trex::core::default_thread_pool().num_threads();
  state.SetLabel(std::string(c.name) + " seq " + std::to_string(T) + (bf16 ? " bf16" : " fp32") +
                 " peak " + std::to_string(g_peak * 1e-9) + " GFLOP/s");
}

BENCHMARK_CAPTURE(BM_TrainStep, nano_fp32, "v4-nano.toml", false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, nano_bf16, "v4-nano.toml", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, micro_fp32, "v4-micro.toml", false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, micro_bf16, "v4-micro.toml", true)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  trex::core::ProbeOptions o;
  o.quick = true;
  o.threads = trex::core::default_thread_pool().num_threads();
  g_peak = trex::core::probe_hardware(o).best_fma().flops_all_cores;
  std::printf("probed fp32 FMA peak: %.1f GFLOP/s on %d threads (MFU = GFLOP/s / peak)\n", g_peak * 1e-9, o.threads);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
