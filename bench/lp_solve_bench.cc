// Throughput of the lp layer over many small models, in-process.
//
//   BM_ParseCorpus              read_lp over every Bench4Opt feasible LP file (bytes/s, models/s)
//   BM_SolveCorpus/<back end>   every linear model of that corpus solved once per iteration by
//                               auto, cbc (in-process) and glpk (one glpsol process per model,
//                               so the gap to cbc is mostly process and file overhead);
//                               the 8 quadratic models are left out (glpk cannot take them)
//   BM_SolveSynthetic/<b>       200 generated MILPs (100 knapsacks, 100 generalized
//                               assignments), so there is a number without the data too
//   BM_SolveCorpusThreads       the linear corpus solved by 1 and by 2 threads that pull models
//                               from one shared queue; read counters wall_s and models_per_s
//                               (the pass's wall time), not Time/items_per_second (see below)
//
// Every solve benchmark counts items (= models) and reports items_per_second over wall time
// (UseRealTime), plus "unsolved" (status without a solution) and "time_limited" (stopped by
// the 5 s per-model limit that only the glpk back end gets; it reaches it on model_44/45).
// Corpus benchmarks need the data (TREX_DATA_DIR, default ../shared/data); without it they
// are reported as errors with a message saying where the data was looked for.
//
// One extra mode, used by bench/run_lp_bench.sh and not a benchmark:
//   lp_solve_bench --export_glpsol_lp=DIR
// writes every linear corpus model to DIR/<file>.lp with plain names (x<j>, r<i>), because
// glpsol's CPLEX LP reader rejects the bracketed names (x[0]) the corpus uses. The models are
// otherwise identical (same coefficients, bounds, types and sense; an objective constant,
// which glpsol's reader does not take as a bare number, becomes the cost of a variable "one"
// fixed at 1). Quadratic models are not written: GLPK solves linear models only.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "trex/lp/lp_format.h"
#include "trex/lp/model.h"
#include "trex/lp/solver.h"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace {

using trex::lp::Model;

constexpr const char* kCorpusRel = "or-benchmarks/bench4opt/slai_trex/bench4opt_feasible/lp_code";

// --- The Bench4Opt corpus, read and parsed once ------------------------------------------

struct Corpus {
  std::string error;                 // non-empty when the corpus is unusable
  std::vector<std::string> names;    // file names, sorted
  std::vector<std::string> texts;    // file contents
  std::vector<Model> models;         // parsed
  std::vector<const Model*> linear;  // models without quadratic terms
  int64_t bytes = 0;
};

Corpus load_corpus() {
  Corpus c;
  std::string dir = trex::find_data(kCorpusRel);
  if (dir.empty()) {
    c.error = "Bench4Opt data not found: no " + trex::data_dir() + "/" + kCorpusRel +
              " (set TREX_DATA_DIR to the shared data folder)";
    return c;
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".lp") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) {
    c.error = "Bench4Opt data folder " + dir + " holds no .lp files";
    return c;
  }
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    c.names.push_back(p.filename().string());
    c.texts.push_back(ss.str());
    c.bytes += int64_t(c.texts.back().size());
  }
  try {
    for (size_t k = 0; k < c.texts.size(); ++k) c.models.push_back(trex::lp::read_lp(c.texts[k], c.names[k]));
  } catch (const std::exception& e) {
    c.error = std::string("Bench4Opt file does not parse: ") + e.what();
    return c;
  }
  for (const auto& m : c.models) {
    if (!m.has_quadratic_objective() && !m.has_quadratic_constraints()) c.linear.push_back(&m);
  }
  return c;
}

const Corpus& corpus() {
  static const Corpus c = load_corpus();
  return c;
}

// --- Synthetic MILPs --------------------------------------------------------------------

// SplitMix64: the same stream on every platform (std:: distributions are not portable).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int between(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }  // inclusive
};

// 0/1 knapsack with 20..34 items, capacity half the total weight.
Model make_knapsack(uint64_t seed) {
  Rng rng{seed};
  Model m;
  m.name = "knapsack" + std::to_string(seed);
  m.sense = trex::lp::Sense::kMaximize;
  int n = rng.between(20, 34);
  std::vector<trex::lp::Term> row;
  double total = 0;
  for (int j = 0; j < n; ++j) {
    int w = rng.between(5, 50), v = rng.between(5, 60);
    int x = m.add_var("x" + std::to_string(j), 0, 1, trex::lp::VarType::kBinary, v);
    row.push_back({x, double(w)});
    total += w;
  }
  m.add_le("capacity", row, std::floor(total / 2));
  return m;
}

// Generalized assignment: n jobs (8..12) each to exactly one of a agents (3..4), each agent's
// load within its capacity (1.3x the even share, so always feasible), minimum total cost.
Model make_assignment(uint64_t seed) {
  Rng rng{seed};
  Model m;
  m.name = "gap" + std::to_string(seed);
  int a = rng.between(3, 4), n = rng.between(8, 12);
  const auto rows = size_t(a), cols = size_t(n);
  std::vector<std::vector<int>> x(rows, std::vector<int>(cols));
  std::vector<std::vector<int>> w(rows, std::vector<int>(cols));
  std::vector<double> load(size_t(a), 0);
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < n; ++j) {
      w[size_t(i)][size_t(j)] = rng.between(5, 25);
      load[size_t(i)] += w[size_t(i)][size_t(j)];
      x[size_t(i)][size_t(j)] = m.add_var("x" + std::to_string(i) + "_" + std::to_string(j), 0, 1,
                                          trex::lp::VarType::kBinary, rng.between(10, 99));
    }
  for (int j = 0; j < n; ++j) {
    std::vector<trex::lp::Term> row;
    for (int i = 0; i < a; ++i) row.push_back({x[size_t(i)][size_t(j)], 1});
    m.add_eq("job" + std::to_string(j), row, 1);
  }
  for (int i = 0; i < a; ++i) {
    std::vector<trex::lp::Term> row;
    for (int j = 0; j < n; ++j) row.push_back({x[size_t(i)][size_t(j)], double(w[size_t(i)][size_t(j)])});
    // Room for 1.3x an even share of the jobs, with this agent's own weights.
    m.add_le("cap" + std::to_string(i), row, std::ceil(1.3 * load[size_t(i)] / a) + 25);
  }
  return m;
}

const std::vector<Model>& synthetic() {
  static const std::vector<Model> models = [] {
    std::vector<Model> out;
    for (uint64_t k = 0; k < 100; ++k) out.push_back(make_knapsack(1000 + k));
    for (uint64_t k = 0; k < 100; ++k) out.push_back(make_assignment(2000 + k));
    return out;
  }();
  return models;
}

// --- Helpers ----------------------------------------------------------------------------

// The glpk back end solves under this per-model limit: on two MILPs of the corpus (model_44/45,
// 315 variables, 165 integer) glpsol's branch and bound runs for many minutes. The other back
// ends get no limit (CBC settles every model in about 3 s, but a wall-clock limit would cut
// it short on a loaded machine and change what is measured).
constexpr double kGlpkTimeLimitS = 5;

struct Tally {
  int unsolved = 0;      // status without a solution
  int time_limited = 0;  // stopped by the time limit (with or without an incumbent)
};

// Solves every model once.
Tally solve_each(const trex::lp::Solver& solver, const std::vector<const Model*>& models) {
  trex::lp::SolveOptions options;
  if (solver.name() == "glpk") options.time_limit_s = kGlpkTimeLimitS;
  Tally t;
  for (const Model* m : models) {
    trex::lp::SolveResult r = solver.solve(*m, options);
    t.unsolved += !trex::lp::has_solution(r.status);
    t.time_limited += r.status == trex::lp::SolveStatus::kTimeLimitFeasible ||
                      r.status == trex::lp::SolveStatus::kTimeLimitNoSolution;
    benchmark::DoNotOptimize(r.objective);
  }
  return t;
}

void set_counters(benchmark::State& state, size_t models, const Tally& t) {
  state.counters["models"] = double(models);
  state.counters["unsolved"] = t.unsolved;
  state.counters["time_limited"] = t.time_limited;
}

// Makes the back end, or reports why not. Returns null after SkipWithError.
std::unique_ptr<trex::lp::Solver> solver_or_skip(benchmark::State& state, const char* name) {
  if (std::strcmp(name, "glpk") == 0 && !trex::program_available("glpsol")) {
    state.SkipWithError("glpsol not found in PATH (Debian package glpk-utils); the glpk back end needs it");
    return nullptr;
  }
  try {
    return trex::lp::make_solver(name);
  } catch (const std::exception& e) {
    static thread_local std::string msg;
    msg = e.what();
    state.SkipWithError(msg.c_str());
    return nullptr;
  }
}

// --- Benchmarks -------------------------------------------------------------------------

void BM_ParseCorpus(benchmark::State& state) {
  const Corpus& c = corpus();
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  for (auto _ : state)
    for (size_t k = 0; k < c.texts.size(); ++k) {
      Model m = trex::lp::read_lp(c.texts[k], c.names[k]);
      benchmark::DoNotOptimize(m.num_vars());
    }
  state.SetItemsProcessed(state.iterations() * int64_t(c.texts.size()));
  state.SetBytesProcessed(state.iterations() * c.bytes);
  state.counters["models"] = double(c.texts.size());
}
BENCHMARK(BM_ParseCorpus)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_SolveCorpus(benchmark::State& state, const char* backend) {
  const Corpus& c = corpus();
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  auto solver = solver_or_skip(state, backend);
  if (!solver) return;
  const auto& models = c.linear;
  Tally tally;
  for (auto _ : state) tally = solve_each(*solver, models);
  state.SetItemsProcessed(state.iterations() * int64_t(models.size()));
  set_counters(state, models.size(), tally);
}
// One iteration = the whole corpus (~336 models, seconds); the script repeats it 5 times.
BENCHMARK_CAPTURE(BM_SolveCorpus, auto, "auto")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_SolveCorpus, cbc, "cbc")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_SolveCorpus, glpk, "glpk")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_SolveSynthetic(benchmark::State& state, const char* backend) {
  auto solver = solver_or_skip(state, backend);
  if (!solver) return;
  std::vector<const Model*> models;
  for (const auto& m : synthetic()) models.push_back(&m);
  Tally tally;
  for (auto _ : state) tally = solve_each(*solver, models);
  state.SetItemsProcessed(state.iterations() * int64_t(models.size()));
  set_counters(state, models.size(), tally);
}
BENCHMARK_CAPTURE(BM_SolveSynthetic, auto, "auto")->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_SolveSynthetic, cbc, "cbc")->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_SolveSynthetic, glpk, "glpk")->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Threads pull model indices from one counter, so a slow model does not leave a thread idle
// while the other still has a fixed share to do. Iterations(1): the counters are reset by
// thread 0 before the loop's start barrier, once per run.
//
// Google Benchmark 1.7.1 folds the threads' own timers into Time and items_per_second (it
// sums or averages per-thread times), which is not the wall time of the pass when one thread
// finishes early. So the pass's wall time is measured here too, from the first thread's start
// to the last thread's end: counter wall_s, and models_per_s = models / wall_s. Those two are
// the numbers to read for this benchmark.
std::atomic<size_t> g_next{0};
std::atomic<int> g_unsolved{0}, g_time_limited{0}, g_finished{0};
std::atomic<int64_t> g_first_start{0}, g_last_end{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void BM_SolveCorpusThreads(benchmark::State& state) {
  const Corpus& c = corpus();
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  auto solver = trex::lp::make_solver("auto");
  const auto& models = c.linear;
  if (state.thread_index() == 0) {
    g_next = 0;
    g_unsolved = 0;
    g_time_limited = 0;
    g_finished = 0;
    g_first_start = std::numeric_limits<int64_t>::max();
    g_last_end = 0;
  }
  int64_t done = 0;
  for (auto _ : state) {
    int64_t start = now_ns(), prev = g_first_start.load();
    while (start < prev && !g_first_start.compare_exchange_weak(prev, start)) {}
    for (size_t k; (k = g_next.fetch_add(1)) < models.size(); ++done) {
      Tally t = solve_each(*solver, {models[k]});
      g_unsolved += t.unsolved;
      g_time_limited += t.time_limited;
    }
    int64_t end = now_ns();
    prev = g_last_end.load();
    while (end > prev && !g_last_end.compare_exchange_weak(prev, end)) {}
    ++g_finished;
  }
  // Summed over threads: the whole corpus once.
  state.SetItemsProcessed(done);
  if (state.thread_index() == 0) {
    while (g_finished.load() < state.threads()) std::this_thread::yield();
    double wall = double(g_last_end.load() - g_first_start.load()) / 1e9;
    set_counters(state, models.size(), {g_unsolved.load(), g_time_limited.load()});
    state.counters["wall_s"] = wall;
    state.counters["models_per_s"] = double(models.size()) / wall;
  }
}
BENCHMARK(BM_SolveCorpusThreads)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Threads(1)->Threads(2);

// --- --export_glpsol_lp=DIR -------------------------------------------------------------

int export_glpsol_lp(const std::string& dir) {
  const Corpus& c = corpus();
  if (!c.error.empty()) {
    std::fprintf(stderr, "lp_solve_bench: %s\n", c.error.c_str());
    return 1;
  }
  std::filesystem::create_directories(dir);
  int written = 0;
  for (size_t k = 0; k < c.models.size(); ++k) {
    const Model& m = c.models[k];
    if (m.has_quadratic_objective() || m.has_quadratic_constraints()) continue;
    Model out;
    out.name = "m";
    out.sense = m.sense;
    for (int j = 0; j < m.num_vars(); ++j) {
      const auto& v = m.var(j);
      out.add_var("x" + std::to_string(j), v.lower, v.upper, v.type, v.cost);
    }
    // glpsol's reader takes no bare number in the objective: carry a constant on a
    // variable fixed at 1.
    if (m.objective_constant != 0)
      out.add_var("one", 1, 1, trex::lp::VarType::kContinuous, m.objective_constant);
    for (int r = 0; r < m.num_rows(); ++r) {
      const auto& row = m.row(r);
      out.add_row("r" + std::to_string(r), row.terms, row.lower, row.upper);
    }
    std::ofstream f(std::filesystem::path(dir) / c.names[k], std::ios::binary);
    f << trex::lp::write_lp(out);
    if (!f) {
      std::fprintf(stderr, "lp_solve_bench: cannot write %s/%s\n", dir.c_str(), c.names[k].c_str());
      return 1;
    }
    ++written;
  }
  std::printf("%d\n", written);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr std::string_view kExport = "--export_glpsol_lp=";
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).starts_with(kExport))
      return export_glpsol_lp(std::string(std::string_view(argv[i]).substr(kExport.size())));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
