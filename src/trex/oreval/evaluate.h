// Scoring completions against a benchmark: extract, execute (sandboxed), solve or compare
// structure, classify. Items run in parallel on `jobs` workers; results come back in input
// order, so a run is deterministic whatever the scheduling.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trex/oreval/benchmark.h"
#include "trex/oreval/execute.h"
#include "trex/oreval/scoring.h"

namespace trex::oreval {

struct Completion {
  std::string id;
  int sample = 0;  // 0..k-1 for --samples k
  std::string text;
};

// Which fields of a completions line hold the id and the text. An empty `id` numbers the
// non-empty lines from 1, as the generic benchmark loader numbers items without an id field,
// so a file holding both the questions and the answers (ORLM's executed.jsonl, its code in
// `en_math_model_coptpy_code`) can be both --bench and --completions.
struct CompletionFields {
  std::string id = "id";
  std::string text = "completion";
};

// JSONL lines {"id": ..., "completion": ..., ["sample": n]}; ids may be strings or numbers.
// Throws InputError naming the file and line.
std::vector<Completion> read_completions(const std::string& path, const CompletionFields& fields = {});

struct ItemResult {
  std::string id;
  int sample = 0;
  CodeKind code_kind = CodeKind::kNone;
  std::string code;
  ErrorClass error = ErrorClass::kNoCode;
  std::string status;                // solver status, or the execution status
  std::optional<double> objective;
  Answer answer;
  std::string message;
  double seconds = 0;
};

struct EvalOptions {
  Comparator mode = Comparator::kAbsolute;
  bool lenient_status = false;  // "infeasible or unbounded" also matches either answer (scoring.h)
  ExecOptions exec;
  int jobs = 2;
};

// One completion against one item (reference_signature cache is internal). Never throws: an
// exception anywhere (a fork that fails, a missing reference LP) becomes this item's
// runtime-error, with the exception's message, and the other items go on.
ItemResult evaluate_one(const Benchmark& bench, const Item& item, const Completion& c, const EvalOptions& o);

// Every completion whose id is in the benchmark; an item without any completion counts as
// no-code. `progress` (may be empty) is called after each result, from worker threads.
std::vector<ItemResult> evaluate(const Benchmark& bench, const std::vector<Completion>& completions,
                                 const EvalOptions& o, const std::function<void()>& progress = {});

}  // namespace trex::oreval
