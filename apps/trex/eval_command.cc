// trex eval run|list|equiv: OR benchmark evaluation (see docs/eval.md). `trex eval gen` is in
// eval_gen_command.cc: it needs the chat client (libcurl), which trex-eval, the program the
// launcher runs for these three, does not link.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "eval_fields.h"
#include "trex/lp/model_file.h"
#include "trex/oreval/orgeval.h"
#include "trex/lp/structure.h"
#include "trex/oreval/benchmark.h"
#include "trex/oreval/evaluate.h"
#include "trex/oreval/report.h"
#include "trex/oreval/sandbox.h"
#include "trex/oreval/short_slice.h"
#include "trex/oreval/warm_pool.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

using namespace trex::oreval;

struct RunArgs {
  std::vector<std::string> benches;
  std::string completions, out, mode = "absolute", code_field;
  FieldNames fields;
  int jobs = 2;
  double timeout = 20, solve_time_limit = 60;
  double memory_mb = 2048;
  bool quiet = false;
  bool references = false;
  bool allow_weak_sandbox = false, lenient_status = false, cold_start = false;
  int max_solves = 100, limit = 0;
};

struct ListArgs {
  std::vector<std::string> benches;
  FieldNames fields;
};

int run_eval(const RunArgs& args) {
  if (args.jobs < 1) throw InputError::field("--jobs", "must be >= 1");
  if (args.timeout <= 0) throw InputError::field("--timeout", "must be > 0");
  if (args.memory_mb < 64) throw InputError::field("--memory-mb", "must be >= 64");
  if (args.max_solves < 0) throw InputError::field("--max-solves", "must be >= 0");
  EvalOptions o;
  o.mode = comparator_from_string(args.mode);
  o.lenient_status = args.lenient_status;
  o.exec.max_solve_requests = args.max_solves;
  o.exec.allow_weak_sandbox = args.allow_weak_sandbox;
  o.exec.warm_pool = !args.cold_start;
  o.jobs = args.jobs;
  o.exec.limits.wall_s = args.timeout;
  o.exec.limits.cpu_s = int(std::max(1.0, args.timeout));
  o.exec.limits.memory_bytes = size_t(args.memory_mb * 1024 * 1024);
  o.exec.solve_time_limit_s = args.solve_time_limit;
  o.exec.python_dir = python_module_dir();  // fails early, before any work
  // The short slice (short_slice.h) from here rather than from the first lease: the start's own
  // wake-ups (the workspace check's child and the wait for it, the interpreter's first steps,
  // all on the fixed cost's path) then preempt other work at once too; the processes started
  // from here inherit it, as the leasing threads' children did.
  request_short_slice(0);
  warm_pool_set_workers(args.jobs);  // before any interpreter starts: whether they fork early
  // Its start overlaps the sandbox probe and the loading below (execute.h); a run refused
  // next kills it at exit.
  prestart_python(o.exec);
  require_sandbox(args.allow_weak_sandbox);  // a missing sandbox layer stops the run before any program
  std::vector<Benchmark> benches;
  for (const auto& b : args.benches) {
    benches.push_back(load_benchmark(b, args.fields));
    // The items eval gen --limit N answered, so the rest do not count as missing.
    if (args.limit > 0 && size_t(args.limit) < benches.back().items.size()) benches.back().items.resize(size_t(args.limit));
  }
  if (args.references == !args.completions.empty())
    throw InputError::field("--completions", "give either --completions FILE or --references");
  // One completion list per benchmark: with --references each benchmark answers with its
  // own programs (the Bench4Opt splits share ids).
  std::vector<std::vector<Completion>> completions(benches.size());
  if (args.references) {
    // The benchmark's own reference programs, as a model would answer: fenced Python. Only
    // the items that have one are scored (Bench4Opt publishes them for about a quarter).
    for (size_t k = 0; k < benches.size(); ++k) {
      std::erase_if(benches[k].items, [](const Item& it) { return it.reference_code.empty(); });
      for (const Item& it : benches[k].items) completions[k].push_back({it.id, 0, "```python\n" + it.reference_code + "\n```\n"});
    }
  } else {
    CompletionFields fields;
    if (!args.code_field.empty()) fields = {args.fields.id, args.code_field};  // an output file of another harness
    std::vector<Completion> all = read_completions(args.completions, fields);
    for (auto& c : completions) c = all;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<ItemResult>> results;
  std::vector<BenchmarkSummary> summaries;
  for (size_t k = 0; k < benches.size(); ++k) {
    const Benchmark& b = benches[k];
    ProgressBar bar(b.name, int64_t(std::max<size_t>(b.items.size(), 1)), args.quiet ? ProgressBar::Mode::kOff : ProgressBar::Mode::kAuto);
    std::mutex mu;
    results.push_back(evaluate(b, completions[k], o, args.quiet ? std::function<void()>() : [&] {
      std::lock_guard<std::mutex> lock(mu);
      bar.advance(1);
    }));
    if (!args.quiet) bar.finish();
    summaries.push_back(summarize(b, results.back()));
    std::set<std::string> ids;
    for (const Item& it : b.items) ids.insert(it.id);
    size_t unmatched = 0;
    for (const Completion& c : completions[k]) unmatched += !ids.count(c.id);
    // With one benchmark, a completion for no item is most likely an id mismatch: say so.
    if (unmatched && benches.size() == 1)
      std::fprintf(stderr, "trex eval: %zu of %zu completions match no item of %s (check the ids)\n", unmatched,
                   completions[k].size(), b.name.c_str());
  }
  // Every program has run: the warm interpreters exit while the report is written.
  warm_pool_release_idle();
  // The lenient status mode is part of the mode: every result line and summary says so.
  std::string mode = std::string(to_string(o.mode)) + (o.lenient_status ? "+lenient-status" : "");
  RunInfo info{mode, sandbox_isolation(), args.references ? "the benchmarks' reference programs" : args.completions,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), warm_program_folders()};
  std::vector<const Benchmark*> ptrs;
  for (const auto& b : benches) ptrs.push_back(&b);
  write_reports(args.out, ptrs, results, summaries, info);
  std::printf("%s", markdown_summary(summaries, info).c_str());
  std::printf("\nwrote %s/{results.jsonl,summary.json,summary.md,report.html}\n", args.out.c_str());
  // The scores stand (a program that never ran counts as a failed one, as before), so the exit
  // code stays 0; what kept trex from running them is said once here, not only per item.
  std::fputs(unscored_items_note(results).c_str(), stderr);
  return 0;
}

int run_list(const ListArgs& args) {
  if (args.benches.empty()) {
    std::printf("%-20s %6s  %s\n", "benchmark", "items", "description");
    for (const auto& nb : named_benchmarks()) {
      std::string count = "-";
      try {
        count = std::to_string(load_benchmark(nb.name).items.size());
      } catch (const InputError&) {
        count = "absent";
      }
      std::printf("%-20s %6s  %s\n", nb.name, count.c_str(), nb.description);
    }
    return 0;
  }
  for (const auto& name : args.benches) {
    Benchmark b = load_benchmark(name, args.fields);
    int counts[5] = {0, 0, 0, 0, 0};
    int with_lp = 0, with_data = 0, with_code = 0;
    for (const Item& it : b.items) {
      counts[int(it.answer.kind)]++;
      with_lp += !it.reference_lp.empty();
      with_data += !it.data_path.empty();
      with_code += !it.reference_code.empty();
    }
    std::printf("%s: %zu items from %s, scored by %s\n", b.name.c_str(), b.items.size(), b.source.c_str(),
                b.score_by == ScoreBy::kStructure ? "structure" : "value");
    std::printf("  answers: %d numbers, %d infeasible, %d unbounded, %d no solution, %d none\n", counts[0], counts[1],
                counts[2], counts[3], counts[4]);
    if (with_lp || with_data || with_code)
      std::printf("  reference LPs: %d, instance data: %d, reference programs: %d\n", with_lp, with_data, with_code);
  }
  return 0;
}

int run_equiv(const std::string& a_file, const std::string& b_file) {
  // The signatures printed are those of the models after fixed variables became constants
  // (orgeval.h step 1); the decision also matches numbers within kOrgevalRelTol.
  lp::Model a = orgeval_prepare(lp::read_model_file(a_file)), b = orgeval_prepare(lp::read_model_file(b_file));
  lp::StructureSignature sa = lp::structure_signature(a), sb = lp::structure_signature(b);
  std::string why;
  bool same = orgeval_equivalent_prepared(a, b, &why);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", a_file.c_str(), sa.num_vars, sa.num_rows,
              sa.num_bound_rows, (unsigned long long)sa.hash);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", b_file.c_str(), sb.num_vars, sb.num_rows,
              sb.num_bound_rows, (unsigned long long)sb.hash);
  if (same)
    std::printf("equivalent (WL refinement stable after %zu round%s)\n", sa.rounds.size() - 1, sa.rounds.size() == 2 ? "" : "s");
  else
    std::printf("different: %s\n", why.c_str());
  return same ? 0 : 1;
}

}  // namespace

void add_field_options(CLI::App* command, oreval::FieldNames* fields) {
  command->add_option("--id-field", fields->id, "Generic loader: the item id field (default: line number)");
  command->add_option("--question-field", fields->question, "Generic loader: the question field")->capture_default_str();
  command->add_option("--answer-field", fields->answer, "Generic loader: the answer field")->capture_default_str();
}

namespace {

void add_eval_command(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate OR modelling completions on benchmarks");
  cmd->require_subcommand(1);
  add_registered_subcommands("eval", *cmd, action);
}

void add_run_command(CLI::App& eval, Action* action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = eval.add_subcommand("run", "Score completions: extract, run sandboxed, solve, compare");
  run->add_option("--bench", args->benches, "Benchmark name (see `trex eval list`) or a JSON/JSONL/CSV file; repeatable")->required();
  run->add_option("--completions", args->completions, "JSONL of {\"id\":..., \"completion\":...}");
  run->add_option("--code-field", args->code_field,
                  "Take each completion from this field of --completions (ids from --id-field, else line numbers)");
  run->add_flag("--references", args->references, "Use each item's reference program (Bench4Opt) as its completion");
  run->add_option("--out", args->out, "Output folder for results.jsonl, summary.{json,md}, report.html")->required();
  run->add_option("--mode", args->mode, "Comparator: absolute (|p-g| <= 1e-6), orlm, sirl, resocratic")->capture_default_str();
  run->add_option("--jobs", args->jobs, "Parallel workers")->capture_default_str();
  run->add_option("--timeout", args->timeout, "Wall-clock seconds per program")->capture_default_str();
  run->add_option("--solve-time-limit", args->solve_time_limit, "Seconds per solve")->capture_default_str();
  run->add_option("--memory-mb", args->memory_mb, "Address-space limit per program (MiB)")->capture_default_str();
  run->add_option("--max-solves", args->max_solves, "optimize() calls one program may make (one more stops it)")
      ->capture_default_str();
  run->add_flag("--lenient-status", args->lenient_status,
                "Let \"infeasible or unbounded\" match an infeasible or unbounded answer too");
  run->add_flag("--allow-weak-sandbox", args->allow_weak_sandbox,
                "Run untrusted programs even when a sandbox layer (Landlock, seccomp, unprivileged uid) is missing");
  run->add_flag("--cold-start", args->cold_start,
                "A fresh interpreter per Python program instead of a fork of the worker's warm one (same sandbox)");
  run->add_option("--limit", args->limit, "Only the first N items of each benchmark (what eval gen --limit N answered)");
  run->add_flag("--quiet", args->quiet, "No progress bar");
  add_field_options(run, &args->fields);
  run->callback([args, action] { *action = [args] { return run_eval(*args); }; });
}

void add_list_command(CLI::App& eval, Action* action) {
  auto args = std::make_shared<ListArgs>();
  CLI::App* list = eval.add_subcommand("list", "Show the named benchmarks, or what a benchmark holds");
  list->add_option("bench", args->benches, "Benchmark names or files");
  add_field_options(list, &args->fields);
  list->callback([args, action] { *action = [args] { return run_list(*args); }; });
}

void add_equiv_command(CLI::App& eval, Action* action) {
  auto files = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* equiv = eval.add_subcommand("equiv", "ORGEval structural equivalence of two models (exit 0 equivalent, 1 not)");
  equiv->add_option("a", files->first, "First model (.lp or .mps)")->required();
  equiv->add_option("b", files->second, "Second model (.lp or .mps)")->required();
  equiv->callback([files, action] { *action = [files] { return run_equiv(files->first, files->second); }; });
}

// The order is the one `trex eval --help` lists: run 10, gen 20 (eval_gen_command.cc), list 30, equiv 40.
const CommandRegistration kEvalRegistration(40, add_eval_command);
const SubcommandRegistration kRunRegistration("eval", 10, add_run_command);
const SubcommandRegistration kListRegistration("eval", 30, add_list_command);
const SubcommandRegistration kEquivRegistration("eval", 40, add_equiv_command);

}  // namespace

}  // namespace trex::cli
