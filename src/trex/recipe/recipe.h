// `trex recipe run FILE`: a chain of trex stages (corpus, training, serving, evaluation) run in
// order, each cached by the hash of its inputs, with a report at the end.
//
// A recipe is a TOML file (configs/recipe/*.toml) of [[stage]] tables, each of one kind:
//   run = [args...]             a trex subcommand, e.g. ["data", "gen", "--out", "{out}/corpus"]
//   train = "FILE"              `trex train` with FILE (a train config template) written into
//                               the output folder with its placeholders filled; the run is
//                               {out}/<stage>; its metrics.jsonl gives the report a loss curve
//   benchmark = "CORPUS"        a corpus's samples as a benchmark file {out}/<stage>.jsonl
//                               (id, question = statement, answer = objective or status)
//   serve = "RUN", bench = "B"  `trex serve` over RUN's newest checkpoint on a free port, then
//                               `trex eval gen` against it and `trex eval run` on B; the server
//                               is stopped (SIGTERM) before scoring; Pass@1 goes to the report.
//                               B is a benchmark file or a public benchmark's name ("nl4opt",
//                               see oreval/benchmark.h) read in place from the data folder
//                               (util/data_dir.h); where that data is absent the stage is
//                               skipped, the reason logged and put in the report, and nothing
//                               recorded (it runs once the data is there). template = "FILE":
//                               the prompt template `trex eval gen` uses (default: the
//                               benchmark's), e.g. the question the SFT rows were trained on
// Strings may hold {out} (the output folder), {recipe} (the recipe file's folder) and
// {configs} (the configs/ folder above it). `inputs = [paths]` names files or folders whose
// contents the stage depends on besides the earlier stages' outputs (configs, data).
//
// Caching: a stage's key hashes its own table, the contents of its inputs (and of a train
// template), and the key of the stage before it, so a changed input re-runs that stage and every
// later one; an unchanged chain is reused. Keys and costs are kept in {out}/stages/<name>.json,
// written when the stage has finished.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace trex::recipe {

struct Stage {
  std::string name;
  std::string kind;             // "run", "train", "benchmark", "serve", "copy_docs"
  std::vector<std::string> args;  // run
  std::string path;             // train: template; benchmark: corpus; serve: run folder
  std::string bench;            // serve
  std::vector<std::string> inputs;
  int max_tokens = 256;         // serve: per completion
  int context = 0;              // serve: --context (0: the model's)
  long limit = 0;               // serve: items evaluated (0: all); benchmark: samples
  long count = 0;               // copy_docs: documents
  uint64_t seed = 1;            // copy_docs: their stream
  std::string style = "mixed";  // copy_docs: which documents (copy_docs.h, CopyStyle)
  std::string label;            // how the report names the model (default: the stage name)
  std::string prompt_template;  // serve: `trex eval gen --template` (empty: the default)
  nlohmann::json table;         // as read, for the key
};

struct Recipe {
  std::string name, file, dir, configs_dir;
  std::vector<Stage> stages;
};

// Throws InputError naming the file, line and key.
Recipe load_recipe(const std::string& path);

struct StageResult {
  std::string name, kind, key;
  bool cached = false;
  std::string skipped;          // why the stage did not run (a public benchmark absent), or ""
  double seconds = 0;           // the stage's own wall time (when it ran)
  nlohmann::json details;       // serve: pass_at_1, items, correct; train: run folder
};

struct RunOptions {
  std::string out_dir;
  std::string trex;             // the trex binary the stages run
  std::function<void(const std::string&)> log;  // one line per stage event (may be empty)
};

// Runs the stages in order; throws InputError when a stage fails (naming it and its command's
// last line of output) or an input is missing.
std::vector<StageResult> run_recipe(const Recipe& recipe, const RunOptions& options);

// {out}/report.md and {out}/report.html: each evaluated model's Pass@1 with its 95% Wilson
// interval, each trained model's loss curve (from its metrics.jsonl), each stage's cost.
void write_report(const Recipe& recipe, const std::string& out_dir, const std::vector<StageResult>& results);

// The 95% Wilson score interval of k successes in n trials.
std::pair<double, double> wilson_interval(long k, long n);

}  // namespace trex::recipe
