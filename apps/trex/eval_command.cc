// trex eval run|list|equiv: OR benchmark evaluation (see docs/eval.md).
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
#include "trex/lp/model_file.h"
#include "trex/oreval/orgeval.h"
#include "trex/lp/structure.h"
#include "nlohmann/json.hpp"
#include "trex/oreval/benchmark.h"
#include "trex/chat/chat_client.h"
#include "trex/oreval/prompt.h"
#include "trex/oreval/evaluate.h"
#include "trex/oreval/report.h"
#include "trex/oreval/sandbox.h"
#include "trex/oreval/warm_pool.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

using namespace trex::oreval;
using namespace trex::chat;

struct EvalArgs {
  std::vector<std::string> benches;
  std::string completions, out, mode = "absolute", code_field;
  std::string id_field, question_field = "question", answer_field = "answer";
  int jobs = 2;
  double timeout = 20, solve_time_limit = 60;
  double memory_mb = 2048;
  bool quiet = false;
  bool references = false;
  bool allow_weak_sandbox = false, lenient_status = false, cold_start = false;
  int max_solves = 100;
  std::string a, b;
  // gen
  std::string endpoint, model, api_key_env = "OPENAI_API_KEY", template_file;
  int samples = 1, shots = 0, concurrency = 4, max_tokens = 4096, retries = 4, limit = 0;
  double temperature = 0, top_p = 1, request_timeout = 600, backoff = 1;
  int64_t seed = 0;
  bool has_seed = false;
};

FieldNames fields_of(const EvalArgs& a) { return {a.id_field, a.question_field, a.answer_field}; }

int run_eval(const EvalArgs& args) {
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
  require_sandbox(args.allow_weak_sandbox);  // so does a missing sandbox layer
  warm_pool_set_workers(args.jobs);  // before any interpreter starts: whether they fork early
  prestart_python(o.exec);  // its start overlaps the loading below (execute.h)
  std::vector<Benchmark> benches;
  for (const auto& b : args.benches) {
    benches.push_back(load_benchmark(b, fields_of(args)));
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
    if (!args.code_field.empty()) fields = {args.id_field, args.code_field};  // an output file of another harness
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
  // The lenient status mode is part of the mode: every result line and summary says so.
  std::string mode = std::string(to_string(o.mode)) + (o.lenient_status ? "+lenient-status" : "");
  RunInfo info{mode, sandbox_isolation(), args.references ? "the benchmarks' reference programs" : args.completions,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), warm_program_folders()};
  std::vector<const Benchmark*> ptrs;
  for (const auto& b : benches) ptrs.push_back(&b);
  write_reports(args.out, ptrs, results, summaries, info);
  std::printf("%s", markdown_summary(summaries, info).c_str());
  std::printf("\nwrote %s/{results.jsonl,summary.json,summary.md,report.html}\n", args.out.c_str());
  return 0;
}

// How a Bench4Opt program finds its instance: data.json and its top-level keys.
std::string data_note(const Item& it) {
  if (it.data_path.empty()) return "";
  std::string keys;
  try {
    auto j = nlohmann::json::parse(read_file(it.data_path));
    if (j.is_object())
      for (auto e = j.begin(); e != j.end(); ++e) keys += (keys.empty() ? "" : ", ") + e.key();
  } catch (const std::exception&) {
  }
  return "The instance data is in the file data.json in the working directory (read it with json.load); its keys: " +
         keys + ".";
}

std::string default_template(const Benchmark& b) {
  std::string dir = eval_config_dir() + "/";
  if (b.name.rfind("b4o", 0) == 0) return dir + "bench4opt.txt";
  if (b.name == "nl4opt") return dir + "nl4opt_think.txt";
  return dir + "zero_shot.txt";
}

int run_gen(const EvalArgs& args) {
  if (args.samples < 1) throw InputError::field("--samples", "must be >= 1");
  if (args.shots < 0) throw InputError::field("--shots", "must be >= 0");
  if (args.benches.size() != 1) throw InputError::field("--bench", "give exactly one benchmark");
  Benchmark b = load_benchmark(args.benches[0], fields_of(args));
  if (args.limit > 0 && size_t(args.limit) < b.items.size()) b.items.resize(size_t(args.limit));
  PromptTemplate t = load_template(args.template_file.empty() ? default_template(b) : args.template_file);
  ChatConfig cfg;
  cfg.base_url = args.endpoint;
  cfg.model = args.model;
  cfg.api_key_env = args.api_key_env;
  cfg.concurrency = args.concurrency;
  cfg.max_retries = args.retries;
  cfg.backoff_s = args.backoff;
  cfg.timeout_s = args.request_timeout;
  cfg.cache_dir = args.out + "/cache";
  ChatClient client(cfg);
  std::unique_ptr<SimilarityIndex> index;
  if (args.shots > 0) index = std::make_unique<SimilarityIndex>(b.items);
  struct Slot {
    size_t item;
    int sample;
  };
  std::vector<ChatRequest> requests;
  std::vector<Slot> slots;
  for (size_t i = 0; i < b.items.size(); ++i) {
    const Item& it = b.items[i];
    std::string examples;
    if (index) {
      for (size_t k : index->most_similar(i, args.shots)) examples += format_example(b.items[k]) + "\n";
      if (!examples.empty()) examples = "Solved examples of similar problems:\n\n" + examples + "Now the problem to solve.\n\n";
    }
    std::map<std::string, std::string> vars = {{"question", it.question}, {"examples", examples}, {"data_note", data_note(it)}};
    for (int s = 0; s < args.samples; ++s) {
      ChatRequest r;
      if (!t.system.empty()) r.messages.push_back({"system", render(t.system, vars, t.file)});
      r.messages.push_back({"user", render(t.user, vars, t.file)});
      r.temperature = args.temperature;
      r.top_p = args.top_p;
      r.max_tokens = args.max_tokens;
      if (args.has_seed) r.seed = args.seed + s;
      else if (args.samples > 1) r.seed = s;  // distinct requests, so distinct cache entries
      requests.push_back(std::move(r));
      slots.push_back({i, s});
    }
  }
  ProgressBar bar("gen " + b.name, int64_t(std::max<size_t>(requests.size(), 1)),
                  args.quiet ? ProgressBar::Mode::kOff : ProgressBar::Mode::kAuto);
  std::vector<ChatResult> results = client.complete_all(requests, [&](size_t, const ChatResult&) { bar.advance(1); });
  bar.finish();
  std::string out, errors;
  int ok = 0, cached = 0, failed = 0, unusable = 0;
  for (size_t k = 0; k < results.size(); ++k) {
    const Item& it = b.items[slots[k].item];
    if (!results[k].ok && results[k].http_status == 422 && results[k].error_code == "number_slot_unfilled") {
      // A completion that names a number slot the prompt has no number for (trex serve with
      // number slots, train/number_slots.h): an answer, and a failed one; it scores as no code.
      ++unusable;
      out += nlohmann::json({{"id", it.id}, {"sample", slots[k].sample}, {"completion", ""}, {"error", results[k].error}})
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else if (results[k].ok) {
      ++ok;
      cached += results[k].from_cache;
      out += nlohmann::json({{"id", it.id}, {"sample", slots[k].sample}, {"completion", results[k].content}})
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else {
      ++failed;
      errors += nlohmann::json({{"id", it.id}, {"sample", slots[k].sample}, {"error", results[k].error}, {"attempts", results[k].attempts}})
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  }
  write_file_atomic(args.out + "/completions.jsonl", out);
  write_file_atomic(args.out + "/errors.jsonl", errors);
  std::printf("%s: %d requests, %d answered (%d from the cache), %d failed\n", b.name.c_str(), int(results.size()), ok, cached, failed);
  if (unusable > 0)
    std::printf("%s: %d answers wrote a number slot the prompt has no number for (scored as failed completions)\n",
                b.name.c_str(), unusable);
  std::printf("wrote %s/completions.jsonl%s\n", args.out.c_str(), failed ? " and errors.jsonl (run again to resume)" : "");
  return failed ? 1 : 0;
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
  // The signatures printed are those of the models after fixed variables became constants
  // (orgeval.h step 1); the decision also matches numbers within kOrgevalRelTol.
  lp::Model a = orgeval_prepare(lp::read_model_file(args.a)), b = orgeval_prepare(lp::read_model_file(args.b));
  lp::StructureSignature sa = lp::structure_signature(a), sb = lp::structure_signature(b);
  std::string why;
  bool same = orgeval_equivalent_prepared(a, b, &why);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", args.a.c_str(), sa.num_vars, sa.num_rows,
              sa.num_bound_rows, (unsigned long long)sa.hash);
  std::printf("%s: %d variables, %d rows (%d became bounds), hash %016llx\n", args.b.c_str(), sb.num_vars, sb.num_rows,
              sb.num_bound_rows, (unsigned long long)sb.hash);
  if (same)
    std::printf("equivalent (WL refinement stable after %zu round%s)\n", sa.rounds.size() - 1, sa.rounds.size() == 2 ? "" : "s");
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
  add_fields(run);
  run->callback([args, action] { *action = [args] { return run_eval(*args); }; });

  CLI::App* gen = cmd->add_subcommand("gen", "Ask an OpenAI-compatible endpoint for completions (cached, resumable)");
  gen->add_option("--bench", args->benches, "Benchmark name or file")->required();
  gen->add_option("--endpoint", args->endpoint, "Base URL, e.g. http://127.0.0.1:8000/v1")->required();
  gen->add_option("--model", args->model, "Model name sent to the endpoint")->required();
  gen->add_option("--out", args->out, "Output folder: completions.jsonl, errors.jsonl, cache/")->required();
  gen->add_option("--api-key-env", args->api_key_env, "Environment variable holding the API key")->capture_default_str();
  gen->add_option("--template", args->template_file, "Prompt template file (default: configs/eval/ by benchmark)");
  gen->add_option("--shots", args->shots, "Few-shot examples chosen by similarity (never the item itself)")->capture_default_str();
  gen->add_option("--samples", args->samples, "Completions per item (acc@k)")->capture_default_str();
  gen->add_option("--temperature", args->temperature)->capture_default_str();
  gen->add_option("--top-p", args->top_p)->capture_default_str();
  gen->add_option("--max-tokens", args->max_tokens)->capture_default_str();
  gen->add_option("--seed", args->seed, "Sampling seed (sample s uses seed + s)")->each([args](const std::string&) { args->has_seed = true; });
  gen->add_option("--concurrency", args->concurrency, "Requests in flight")->capture_default_str();
  gen->add_option("--retries", args->retries, "Retries per request (transport errors, 408, 429, 5xx)")->capture_default_str();
  gen->add_option("--backoff", args->backoff, "First retry delay in seconds, doubled each time")->capture_default_str();
  gen->add_option("--request-timeout", args->request_timeout, "Seconds per request")->capture_default_str();
  gen->add_option("--limit", args->limit, "Only the first N items");
  gen->add_flag("--quiet", args->quiet, "No progress bar");
  add_fields(gen);
  gen->callback([args, action] { *action = [args] { return run_gen(*args); }; });

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
const CommandRegistration kEvalRegistration(40, add_eval_command);
}  // namespace

}  // namespace trex::cli
