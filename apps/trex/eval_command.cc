// trex eval run|list|equiv: OR benchmark evaluation (see docs/eval.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "commands.h"
#include "trex/lp/model_file.h"
#include "trex/lp/structure.h"
#include "trex/oreval/benchmark.h"
#include "trex/oreval/evaluate.h"
#include "trex/oreval/report.h"
#include "trex/oreval/sandbox.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

using namespace trex::oreval;

struct EvalArgs {
  std::vector<std::string> benches;
  std::string completions, out, mode = "absolute";
  std::string id_field, question_field = "question", answer_field = "answer";
  int jobs = 2;
  double timeout = 20, solve_time_limit = 60;
  double memory_mb = 2048;
  bool quiet = false;
  bool references = false;
  std::string a, b;
};

FieldNames fields_of(const EvalArgs& a) { return {a.id_field, a.question_field, a.answer_field}; }

int run_eval(const EvalArgs& args) {
  if (args.jobs < 1) throw InputError::field("--jobs", "must be >= 1");
  if (args.timeout <= 0) throw InputError::field("--timeout", "must be > 0");
  if (args.memory_mb < 64) throw InputError::field("--memory-mb", "must be >= 64");
  EvalOptions o;
  o.mode = comparator_from_string(args.mode);
  o.jobs = args.jobs;
  o.exec.limits.wall_s = args.timeout;
  o.exec.limits.cpu_s = int(std::max(1.0, args.timeout));
  o.exec.limits.memory_bytes = size_t(args.memory_mb * 1024 * 1024);
  o.exec.solve_time_limit_s = args.solve_time_limit;
  o.exec.python_dir = python_module_dir();  // fails early, before any work
  std::vector<Benchmark> benches;
  for (const auto& b : args.benches) benches.push_back(load_benchmark(b, fields_of(args)));
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
    std::vector<Completion> all = read_completions(args.completions);
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
  }
  RunInfo info{to_string(o.mode), sandbox_isolation(), args.references ? "the benchmarks' reference programs" : args.completions,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  std::vector<const Benchmark*> ptrs;
  for (const auto& b : benches) ptrs.push_back(&b);
  write_reports(args.out, ptrs, results, summaries, info);
  std::printf("%s", markdown_summary(summaries, info).c_str());
  std::printf("\nwrote %s/{results.jsonl,summary.json,summary.md,report.html}\n", args.out.c_str());
  return 0;
}

int run_list(const EvalArgs& args) {
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
    Benchmark b = load_benchmark(name, fields_of(args));
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

int run_equiv(const EvalArgs& args) {
  lp::Model a = lp::read_model_file(args.a), b = lp::read_model_file(args.b);
  lp::StructureSignature sa = lp::structure_signature(a), sb = lp::structure_signature(b);
  std::string why;
  bool same = lp::structurally_equivalent(sa, sb, &why);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", args.a.c_str(), sa.num_vars, sa.num_rows,
              sa.num_bound_rows, (unsigned long long)sa.hash);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", args.b.c_str(), sb.num_vars, sb.num_rows,
              sb.num_bound_rows, (unsigned long long)sb.hash);
  if (same)
    std::printf("equivalent (WL refinement stable after %zu rounds)\n", sa.rounds.size() - 1);
  else
    std::printf("different: %s\n", why.c_str());
  return same ? 0 : 1;
}

}  // namespace

void add_eval_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate OR modelling completions on benchmarks");
  cmd->require_subcommand(1);
  auto add_fields = [args](CLI::App* c) {
    c->add_option("--id-field", args->id_field, "Generic loader: the item id field (default: line number)");
    c->add_option("--question-field", args->question_field, "Generic loader: the question field")->capture_default_str();
    c->add_option("--answer-field", args->answer_field, "Generic loader: the answer field")->capture_default_str();
  };

  CLI::App* run = cmd->add_subcommand("run", "Score completions: extract, run sandboxed, solve, compare");
  run->add_option("--bench", args->benches, "Benchmark name (see `trex eval list`) or a JSON/JSONL/CSV file; repeatable")->required();
  run->add_option("--completions", args->completions, "JSONL of {\"id\":..., \"completion\":...}");
  run->add_flag("--references", args->references, "Use each item's reference program (Bench4Opt) as its completion");
  run->add_option("--out", args->out, "Output folder for results.jsonl, summary.{json,md}, report.html")->required();
  run->add_option("--mode", args->mode, "Comparator: absolute (|p-g| <= 1e-6), orlm, sirl, resocratic")->capture_default_str();
  run->add_option("--jobs", args->jobs, "Parallel workers")->capture_default_str();
  run->add_option("--timeout", args->timeout, "Wall-clock seconds per program")->capture_default_str();
  run->add_option("--solve-time-limit", args->solve_time_limit, "Seconds per solve")->capture_default_str();
  run->add_option("--memory-mb", args->memory_mb, "Address-space limit per program (MiB)")->capture_default_str();
  run->add_flag("--quiet", args->quiet, "No progress bar");
  add_fields(run);
  run->callback([args, action] { *action = [args] { return run_eval(*args); }; });

  CLI::App* list = cmd->add_subcommand("list", "Show the named benchmarks, or what a benchmark holds");
  list->add_option("bench", args->benches, "Benchmark names or files");
  add_fields(list);
  list->callback([args, action] { *action = [args] { return run_list(*args); }; });

  CLI::App* equiv = cmd->add_subcommand("equiv", "ORGEval structural equivalence of two models (exit 0 equivalent, 1 not)");
  equiv->add_option("a", args->a, "First model (.lp or .mps)")->required();
  equiv->add_option("b", args->b, "Second model (.lp or .mps)")->required();
  equiv->callback([args, action] { *action = [args] { return run_equiv(*args); }; });
}

namespace {
const CommandRegistration kRegistration(40, add_eval_command);
}  // namespace

}  // namespace trex::cli
