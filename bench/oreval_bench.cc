// Throughput of trex eval (bench/oreval_run_bench.sh runs it beside the Python baseline).
//
//   BM_EquivWithParse     ORGEval checks over the Bench4Opt reference LP pairs, each check
//                         reading and parsing both files, as the Python baseline does
//   BM_EquivParsed        the same checks on models already in memory (signature + compare)
//   BM_ScoreLp            LP completions scored: extract, parse, solve (auto), compare
//   BM_ScorePython        Python completions scored: the reference programs of the feasible
//                         split, each in a fresh sandboxed /usr/bin/python3, solved and compared
//   BM_SandboxStartup     a sandboxed /usr/bin/python3 that imports the gurobipy module and
//                         does nothing: the floor under BM_ScorePython
//
// Pairs: the reference LPs of both slai_trex splits, in order of their numeric id within each
// split, taken two at a time (ids 2k and 2k+1 are usually one problem in two wordings), so
// most checks run the refinement to the end. The pair list is printed with --list_pairs for
// the baseline. Items are checks or completions; read items_per_second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "trex/lp/lp_format.h"
#include "trex/lp/structure.h"
#include "trex/oreval/evaluate.h"
#include "trex/oreval/sandbox.h"
#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace trex;
using namespace trex::oreval;

std::vector<std::pair<std::string, std::string>> lp_pairs() {
  std::vector<std::pair<std::string, std::string>> pairs;
  static const std::regex id(R"(model_(\d+)_)");
  for (const char* split : {"or-benchmarks/bench4opt/slai_trex/bench4opt_feasible/lp_code",
                            "or-benchmarks/bench4opt/slai_trex/bench4opt/lp_code"}) {
    std::string dir = find_data(split);
    if (dir.empty()) continue;
    std::vector<std::pair<long, std::string>> files;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::smatch m;
      std::string name = e.path().filename().string();
      if (std::regex_search(name, m, id)) files.push_back({std::stol(m[1]), e.path().string()});
    }
    std::sort(files.begin(), files.end());
    for (size_t k = 0; k + 1 < files.size(); k += 2) pairs.push_back({files[k].second, files[k + 1].second});
  }
  return pairs;
}

bool need_data(benchmark::State& state, bool ok) {
  if (!ok) state.SkipWithError(("Bench4Opt data not found under " + data_dir()).c_str());
  return ok;
}

void BM_EquivWithParse(benchmark::State& state) {
  auto pairs = lp_pairs();
  if (!need_data(state, !pairs.empty())) return;
  int64_t equivalent = 0;
  for (auto _ : state) {
    equivalent = 0;
    for (const auto& [a, b] : pairs) {
      lp::Model ma = lp::read_lp(read_file(a), a), mb = lp::read_lp(read_file(b), b);
      equivalent += lp::structurally_equivalent(ma, mb);
    }
  }
  state.SetItemsProcessed(state.iterations() * int64_t(pairs.size()));
  state.counters["pairs"] = double(pairs.size());
  state.counters["equivalent"] = double(equivalent);
}

void BM_EquivParsed(benchmark::State& state) {
  auto pairs = lp_pairs();
  if (!need_data(state, !pairs.empty())) return;
  std::vector<std::pair<lp::Model, lp::Model>> models;
  for (const auto& [a, b] : pairs) models.push_back({lp::read_lp(read_file(a), a), lp::read_lp(read_file(b), b)});
  for (auto _ : state)
    for (const auto& [a, b] : models) benchmark::DoNotOptimize(lp::structurally_equivalent(a, b));
  state.SetItemsProcessed(state.iterations() * int64_t(models.size()));
}

Benchmark feasible_items(size_t n, bool with_code) {
  Benchmark b = load_benchmark("b4o-feasible");
  std::vector<Item> kept;
  for (const Item& it : b.items)
    if (!with_code || !it.reference_code.empty()) kept.push_back(it);
  if (kept.size() > n) kept.resize(n);
  b.items = kept;
  return b;
}

void BM_ScoreLp(benchmark::State& state) {
  if (!need_data(state, !find_data("or-benchmarks/bench4opt").empty())) return;
  Benchmark b = feasible_items(size_t(state.range(0)), false);
  std::vector<Completion> cs;
  for (const Item& it : b.items) cs.push_back({it.id, 0, "```lp\n" + read_file(it.reference_lp) + "```\n"});
  EvalOptions o;
  o.jobs = 1;
  int64_t correct = 0;
  for (auto _ : state) {
    correct = 0;
    for (size_t k = 0; k < cs.size(); ++k) correct += evaluate_one(b, b.items[k], cs[k], o).error == ErrorClass::kCorrect;
  }
  state.SetItemsProcessed(state.iterations() * int64_t(cs.size()));
  state.counters["correct"] = double(correct);
}

ExecOptions exec_options() {
  ExecOptions e;
  e.python_dir = python_module_dir();
  return e;
}

void BM_ScorePython(benchmark::State& state) {
  if (!need_data(state, !find_data("or-benchmarks/bench4opt").empty())) return;
  Benchmark b = feasible_items(size_t(state.range(0)), true);
  std::vector<Completion> cs;
  for (const Item& it : b.items) cs.push_back({it.id, 0, "```python\n" + it.reference_code + "\n```\n"});
  EvalOptions o;
  o.jobs = 1;
  o.exec = exec_options();
  int64_t correct = 0;
  for (auto _ : state) {
    correct = 0;
    for (size_t k = 0; k < cs.size(); ++k) correct += evaluate_one(b, b.items[k], cs[k], o).error == ErrorClass::kCorrect;
  }
  state.SetItemsProcessed(state.iterations() * int64_t(cs.size()));
  state.counters["correct"] = double(correct);
}

void BM_SandboxStartup(benchmark::State& state) {
  ExecOptions o = exec_options();
  Extraction nothing{CodeKind::kPython, "import gurobipy\n"};
  for (auto _ : state) benchmark::DoNotOptimize(execute(nothing, "", o));
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_EquivWithParse)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_EquivParsed)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_ScoreLp)->Arg(40)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_ScorePython)->Arg(20)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_SandboxStartup)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(20);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--list_pairs") == 0) {
      for (const auto& [a, b] : lp_pairs()) std::printf("%s\t%s\n", a.c_str(), b.c_str());
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
