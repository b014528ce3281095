// Speed of the step planner: one prediction, and the strategy search for DeepSeek-V4-Pro on
// one CloudMatrix384 (384 NPUs), the case issue 7 asks to finish in under 10 s.
// Run from the repository root (configs/ is read relative to it), or set TREX_SOURCE_DIR:
//   build/plan_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Results: bench/results/plan_bench.md.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/predict.h"
#include "trex/plan/search.h"
#include "trex/plan/strategy.h"

namespace {

std::string config(const std::string& rel) {
  const char* root = std::getenv("TREX_SOURCE_DIR");
  return (root != nullptr ? std::string(root) + "/" : std::string()) + rel;
}

struct Inputs {
  trex::model::ModelConfig model = trex::model::load_model_config(config("configs/model/deepseek-v4-pro.toml"));
  trex::plan::Cluster cluster = trex::plan::load_cluster(config("configs/cluster/cloudmatrix384.toml"));
  trex::plan::Run run = trex::plan::load_run(config("configs/run/v4-pro-8k.toml"));
};

const Inputs& inputs() {
  static const Inputs in;
  return in;
}

void BM_PredictV4ProCm384(benchmark::State& state) {
  const Inputs& in = inputs();
  trex::plan::Strategy s = trex::plan::load_strategy(config("configs/strategy/v4-pro-cm384-optimized.toml"));
  for (auto _ : state) benchmark::DoNotOptimize(trex::plan::predict(in.model, in.cluster, in.run, s).time.step);
}
BENCHMARK(BM_PredictV4ProCm384)->Unit(benchmark::kMicrosecond);

void BM_SearchV4ProCm384(benchmark::State& state) {
  const Inputs& in = inputs();
  trex::plan::SearchOptions o;
  o.top_k = 5;
  long evaluated = 0;
  for (auto _ : state) {
    trex::plan::SearchResult r = trex::plan::search(in.model, in.cluster, in.run, o);
    evaluated = r.evaluated;
    benchmark::DoNotOptimize(r.top.front().time.step);
  }
  state.counters["predictions"] = double(evaluated);
}
BENCHMARK(BM_SearchV4ProCm384)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
