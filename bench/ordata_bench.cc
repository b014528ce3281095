// OR-CPT corpus throughput (bench/run_ordata_bench.sh runs it beside the Python baselines).
//
//   BM_BuildSamples/threads:T  generate, solve, render, reconstruct and check N samples of the
//                              default mixture on T threads (no dedup, no files)
//   BM_CorpusRun/T             the whole `trex data gen` pipeline into a temporary directory:
//                              blocks, dedup, JSONL parts, views, manifest
// Counters: samples_per_s (wall). Google Benchmark's Time column for the threaded case is not
// the wall time of a pass; read the counter.
//
// `ordata_bench export-specs FILE COUNT SEED` writes the instances of a run (model and story,
// one JSON per line) for the Python baselines, so that both sides solve the same instances.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "trex/core/thread_pool.h"
#include "trex/ordata/builder.h"
#include "trex/ordata/corpus_run.h"
#include "trex/ordata/render.h"

namespace {

using namespace trex::ordata;

long bench_count() {
  const char* c = std::getenv("ORDATA_BENCH_COUNT");
  return c ? std::atol(c) : 1000;
}

CorpusConfig bench_config(long count) {
  CorpusConfig c = default_config();
  c.count = count;
  c.seed = 1;
  finalize_config(c);
  return c;
}

void BM_BuildSamples(benchmark::State& state) {
  const int threads = int(state.range(0));
  const long n = bench_count();
  CorpusConfig cfg = bench_config(n);
  trex::core::ThreadPool pool(threads);
  std::vector<std::unique_ptr<SampleBuilder>> builders;
  for (int t = 0; t < threads; ++t) builders.push_back(std::make_unique<SampleBuilder>(cfg));
  double wall = 0;
  long rejected = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    std::atomic<long> next{0}, bad{0};
    pool.run([&](int t) {
      StageTimes times;
      for (long k; (k = next.fetch_add(1)) < n;) {
        Sample s = builders[size_t(t)]->build(uint64_t(k), times);
        if (!s.rejection.empty()) ++bad;
      }
    });
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rejected += bad;
  }
  state.counters["samples_per_s"] = double(n) * double(state.iterations()) / wall;
  state.counters["rejected_share"] = double(rejected) / double(n * long(state.iterations()));
}
BENCHMARK(BM_BuildSamples)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

void BM_CorpusRun(benchmark::State& state) {
  const int threads = int(state.range(0));
  const long n = bench_count();
  double wall = 0;
  for (auto _ : state) {
    std::string dir = (std::filesystem::temp_directory_path() / ("trex_ordata_bench_" + std::to_string(getpid()))).string();
    std::filesystem::remove_all(dir);
    RunOptions o;
    o.config = bench_config(n);
    o.out_dir = dir;
    o.threads = threads;
    auto t0 = std::chrono::steady_clock::now();
    RunReport r = run_corpus(o);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(r.accepted);
    std::filesystem::remove_all(dir);
  }
  state.counters["samples_per_s"] = double(n) * double(state.iterations()) / wall;
}
BENCHMARK(BM_CorpusRun)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

nlohmann::ordered_json spec(const Sample& s) {
  nlohmann::ordered_json j;
  j["id"] = s.id;
  j["family"] = s.family;
  j["template"] = s.template_name;
  j["concise"] = s.variant == "concise";
  j["sense"] = s.model.sense == trex::lp::Sense::kMaximize ? "max" : "min";
  nlohmann::ordered_json vars = nlohmann::ordered_json::array();
  for (const auto& v : s.model.vars())
    vars.push_back({v.name, v.lower == -trex::lp::kInf ? nlohmann::ordered_json("-inf") : nlohmann::ordered_json(v.lower),
                    v.upper == trex::lp::kInf ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(v.upper),
                    trex::lp::to_string(v.type), v.cost});
  j["vars"] = vars;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : s.model.rows()) {
    nlohmann::ordered_json terms = nlohmann::ordered_json::array();
    for (const auto& t : r.terms) terms.push_back({t.var, t.coef});
    rows.push_back({r.name, r.lower == -trex::lp::kInf ? nlohmann::ordered_json("-inf") : nlohmann::ordered_json(r.lower),
                    r.upper == trex::lp::kInf ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(r.upper), terms});
  }
  j["rows"] = rows;
  const Story& st = s.story;
  nlohmann::ordered_json tables = nlohmann::ordered_json::array();
  for (const Table& t : st.tables)
    tables.push_back({{"caption", t.caption}, {"row_header", t.row_header}, {"columns", t.columns}, {"rows", t.rows}, {"cells", t.cells}});
  j["story"] = {{"industry", st.industry}, {"company", st.company}, {"setting", st.setting}, {"decision", st.decision},
                {"tables", tables}, {"facts", st.facts}, {"rules", st.rules}, {"objective", st.objective},
                {"integrality", st.integrality}};
  j["status"] = trex::lp::to_string(s.status);
  j["objective"] = s.objective;
  return j;
}

int export_specs(const char* path, long count, uint64_t seed) {
  CorpusConfig cfg = bench_config(count);
  cfg.seed = seed;
  SampleBuilder b(cfg);
  std::ofstream out(path);
  StageTimes t;
  for (long k = 0; k < count; ++k) out << spec(b.build(uint64_t(k), t)).dump() << "\n";
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "export-specs") return export_specs(argv[2], std::atol(argv[3]), std::strtoull(argv[4], nullptr, 10));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
