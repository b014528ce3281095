// Reports of an evaluation run: per-item JSONL, per-benchmark Pass@1 and acc@k, the overall
// accuracy over the report's four benchmarks, Markdown, and one self-contained HTML page.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trex/oreval/benchmark.h"
#include "trex/oreval/evaluate.h"

namespace trex::oreval {

struct BenchmarkSummary {
  std::string name;
  bool in_overall = false;
  int items = 0;
  int samples = 1;                    // k: the most samples any item had
  double pass_at_1 = 0;               // mean over items of (correct samples / samples)
  double acc_at_k = 0;                // items with at least one correct sample / items
  std::map<std::string, int> classes; // error class -> count over all samples
};

BenchmarkSummary summarize(const Benchmark& bench, const std::vector<ItemResult>& results);

// The mean Pass@1 of the summaries marked in_overall, or -1 when there are none.
double overall_accuracy(const std::vector<BenchmarkSummary>& summaries);

struct RunInfo {
  std::string mode;       // comparator
  std::string isolation;  // sandbox_isolation()
  std::string completions;
  double seconds = 0;
  std::string program_folders;  // warm_program_folders(); not a sandbox layer (docs/eval.md)
};

// Writes DIR/results.jsonl, DIR/summary.json, DIR/summary.md and DIR/report.html, each
// atomically. `results` holds one vector per benchmark, in the order of `benches`.
void write_reports(const std::string& dir, const std::vector<const Benchmark*>& benches,
                   const std::vector<std::vector<ItemResult>>& results,
                   const std::vector<BenchmarkSummary>& summaries, const RunInfo& info);

std::string markdown_summary(const std::vector<BenchmarkSummary>& summaries, const RunInfo& info);

// One line for stderr (with its newline) when trex itself could not score items of the run:
// status "error", where evaluate_one caught an exception (a warm interpreter refused its
// workspace, a fork that failed), whose reason is otherwise only in each item's line of
// results.jsonl while the run exits 0. How many items, of how many, and the most common reason
// (ties: the first met); "" when there are none.
std::string unscored_items_note(const std::vector<std::vector<ItemResult>>& results);

}  // namespace trex::oreval
