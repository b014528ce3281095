// trex eval gen: ask an OpenAI-compatible endpoint for completions (see docs/eval.md). A file of
// its own because it needs the chat client (libcurl and the 25 libraries it loads): trex-eval, the
// lean program that the launcher runs for `trex eval run|list|equiv`, is linked without it.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "eval_fields.h"
#include "nlohmann/json.hpp"
#include "trex/chat/chat_client.h"
#include "trex/oreval/benchmark.h"
#include "trex/oreval/prompt.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

using namespace trex::oreval;
using namespace trex::chat;

struct EvalGenArgs {
  std::vector<std::string> benches;
  std::string out;
  FieldNames fields;
  std::string endpoint, model, api_key_env = "OPENAI_API_KEY", template_file;
  int samples = 1, shots = 0, concurrency = 4, max_tokens = 4096, retries = 4, limit = 0;
  double temperature = 0, top_p = 1, request_timeout = 600, backoff = 1;
  int64_t seed = 0;
  bool has_seed = false, quiet = false;
};

// How a Bench4Opt program finds its instance: data.json and its top-level keys.
std::string instance_data_note(const Item& it) {
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

std::string eval_gen_default_template(const Benchmark& b) {
  std::string dir = eval_config_dir() + "/";
  if (b.name.rfind("b4o", 0) == 0) return dir + "bench4opt.txt";
  if (b.name == "nl4opt") return dir + "nl4opt_think.txt";
  return dir + "zero_shot.txt";
}

int run_eval_gen(const EvalGenArgs& args) {
  if (args.samples < 1) throw InputError::field("--samples", "must be >= 1");
  if (args.shots < 0) throw InputError::field("--shots", "must be >= 0");
  if (args.benches.size() != 1) throw InputError::field("--bench", "give exactly one benchmark");
  Benchmark b = load_benchmark(args.benches[0], args.fields);
  if (args.limit > 0 && size_t(args.limit) < b.items.size()) b.items.resize(size_t(args.limit));
  PromptTemplate t = load_template(args.template_file.empty() ? eval_gen_default_template(b) : args.template_file);
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
    std::map<std::string, std::string> vars = {{"question", it.question}, {"examples", examples}, {"data_note", instance_data_note(it)}};
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

void add_eval_gen_command(CLI::App& eval, Action* action) {
  auto args = std::make_shared<EvalGenArgs>();
  CLI::App* gen = eval.add_subcommand("gen", "Ask an OpenAI-compatible endpoint for completions (cached, resumable)");
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
  add_field_options(gen, &args->fields);
  gen->callback([args, action] { *action = [args] { return run_eval_gen(*args); }; });
}

// Second in `trex eval --help`, after run (eval_command.cc).
const SubcommandRegistration kEvalGenRegistration("eval", 20, add_eval_gen_command);

}  // namespace

}  // namespace trex::cli
