// trex generate --ckpt DIR (--prompt TEXT | --prompts FILE.jsonl --out FILE.jsonl): sampling
// from a checkpoint `trex train` wrote, one token at a time with KV caches (model/generator.h).
//
// The checkpoint is read by train::load_inference_checkpoint: the model config it records, which
// --model-config must match (--model-config names the model of an older checkpoint, which
// records none, when the run's train config has moved).
//
// Prompt format: "chat" renders the text as one user message and opens the assistant turn
// (train/chat_template.h) and stops at <|end|>; "text" is <s> + text and stops at </s>; "auto"
// (default) is chat for a checkpoint trained in SFT mode, text otherwise.
//
// Batch mode reads JSONL lines {"id": ..., "prompt": "..."} or {"id": ..., "messages": [{"role":
// ..., "content": ...}, ...]} and writes {"id": ..., "sample": s, "completion": "..."} lines,
// the format `trex eval run --completions` reads; sample s of --samples k uses seed + s.
//
// A checkpoint whose tokenizer has number slots (train/number_slots.h) gets a chat prompt's
// numbers as slots and writes them back into the completion. A completion with a slot the prompt
// has no number for is an error: exit 1 for --prompt; in batch mode that line's completion is ""
// with the reason in "error" (trex eval run scores it as a failed completion).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/model/generator.h"
#include "trex/model/transformer.h"
#include "trex/train/chat_template.h"
#include "trex/train/number_slots.h"
#include "trex/train/inference_checkpoint.h"
#include "trex/train/tokenizer.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::cli {

namespace {

struct GenerateArgs {
  std::string ckpt;
  std::string model_config;
  std::string prompt;
  std::string prompts;
  std::string out;
  std::string format = "auto";
  int64_t max_tokens = 256;
  double temperature = 0;
  double top_p = 1;
  uint64_t seed = 0;
  int samples = 1;
  bool quiet = false;
};

// A checkpoint loaded for sampling.
struct Loaded {
  train::InferenceCheckpoint ckpt;
  train::Tokenizer* tok = nullptr;
  std::unique_ptr<model::Generator> gen;
  bool chat = false;
};

Loaded load_checkpoint(const GenerateArgs& a) {
  Loaded l;
  l.ckpt = train::load_inference_checkpoint(a.ckpt, a.model_config);
  l.tok = l.ckpt.tok.get();
  l.gen = std::make_unique<model::Generator>(*l.ckpt.model);
  l.gen->load_routing_state(l.ckpt.weights);
  l.chat = a.format == "auto" ? l.ckpt.sft : a.format == "chat";
  return l;
}

// Throws train::NumberSlotError (number slots only).
std::string complete(Loaded& l, const std::vector<train::ChatMessage>& messages,
                     const std::string& text, const GenerateArgs& a, uint64_t seed) {
  std::vector<int32_t> prompt;
  model::SamplingOptions o;
  o.temperature = a.temperature;
  o.top_p = a.top_p;
  o.seed = seed;
  o.max_tokens = a.max_tokens;
  o.stop_ids = {l.tok->eos_id()};
  o.vocab_limit = l.tok->vocab_size();
  std::vector<std::string> numbers;
  if (l.chat) {
    prompt = train::render_prompt(messages, *l.tok, &numbers);
    o.stop_ids.push_back(l.tok->end_id());
    // A slot past the prompt's numbers could never be filled: it is never drawn.
    o.excluded_ids = train::unfillable_slot_ids(*l.tok, numbers.size());
  } else {
    prompt = {l.tok->bos_id()};
    std::vector<int32_t> body = l.tok->encode(text);
    prompt.insert(prompt.end(), body.begin(), body.end());
  }
  const std::string completion = l.tok->decode(l.gen->generate(prompt, o));
  return l.chat && l.tok->number_slot_count() > 0 ? train::from_slots(completion, numbers) : completion;
}

// One request of a prompts file.
struct Request {
  nlohmann::json id;
  std::vector<train::ChatMessage> messages;
  std::string text;  // the prompt as plain text (text format)
};

std::vector<Request> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the prompts file");
  std::vector<Request> out;
  std::string line;
  long n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, n, std::string("not JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("id") || !(j["id"].is_string() || j["id"].is_number_integer()))
      throw InputError(path, n, "each line needs an \"id\" (string or integer)");
    Request r;
    r.id = j["id"];
    if (j.contains("prompt")) {
      if (!j["prompt"].is_string()) throw InputError(path, n, "\"prompt\" must be a string");
      r.text = j["prompt"].get<std::string>();
      r.messages = {{train::Role::kUser, r.text}};
    } else if (j.contains("messages") && j["messages"].is_array()) {
      for (const nlohmann::json& m : j["messages"]) {
        train::ChatMessage cm;
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
            !m.contains("content") || !m["content"].is_string() ||
            !train::parse_role(m["role"].get<std::string>(), &cm.role))
          throw InputError(path, n, "each message needs a role (system, user, assistant) and a "
                                    "string content");
        cm.content = m["content"].get<std::string>();
        if (!r.text.empty()) r.text += "\n";
        r.text += cm.content;
        r.messages.push_back(std::move(cm));
      }
      if (r.messages.empty()) throw InputError(path, n, "\"messages\" is empty");
    } else {
      throw InputError(path, n, "each line needs \"prompt\" (a string) or \"messages\" (a list)");
    }
    out.push_back(std::move(r));
  }
  return out;
}

int run_generate(const GenerateArgs& a) {
  if (a.prompt.empty() == a.prompts.empty())
    throw InputError::field("--prompt", "give exactly one of --prompt TEXT and --prompts FILE");
  if (!a.prompts.empty() && a.out.empty())
    throw InputError::field("--out", "batch mode (--prompts) needs --out FILE.jsonl");
  if (a.format != "auto" && a.format != "chat" && a.format != "text")
    throw InputError::field("--format", "expected auto, chat or text, got '" + a.format + "'");
  if (a.max_tokens < 1) throw InputError::field("--max-tokens", "must be at least 1");
  if (!(a.top_p > 0 && a.top_p <= 1)) throw InputError::field("--top-p", "must be in (0, 1]");
  if (a.samples < 1) throw InputError::field("--samples", "must be at least 1");
  std::vector<Request> requests;
  if (!a.prompts.empty()) requests = read_prompts(a.prompts);  // bad input fails before loading
  Loaded l = load_checkpoint(a);

  if (!a.prompt.empty()) {
    std::string text;
    try {
      text = complete(l, {{train::Role::kUser, a.prompt}}, a.prompt, a, a.seed);
    } catch (const train::NumberSlotError& e) {
      std::fprintf(stderr, "generate: %s\n", e.what());
      return 1;
    }
    std::printf("%s\n", text.c_str());
    return 0;
  }
  ProgressBar bar("generate", int64_t(requests.size()) * a.samples,
                        a.quiet ? ProgressBar::Mode::kOff : ProgressBar::Mode::kAuto);
  std::string out;
  for (const Request& r : requests)
    for (int s = 0; s < a.samples; ++s) {
      nlohmann::ordered_json j;
      j["id"] = r.id;
      j["sample"] = s;
      try {
        j["completion"] = complete(l, r.messages, r.text, a, a.seed + uint64_t(s));
      } catch (const train::NumberSlotError& e) {
        j["completion"] = "";
        j["error"] = e.what();
      }
      out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      bar.advance();
    }
  bar.finish();
  write_file_atomic(a.out, out);
  std::fprintf(stderr, "generate: %zu completions -> %s\n", requests.size() * size_t(a.samples),
               a.out.c_str());
  return 0;
}

void add_generate(CLI::App& app, Action* action) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Sample from a trained checkpoint (KV-cached decoding)");
  cmd->add_option("--ckpt", args->ckpt, "Checkpoint directory, or a run directory (its newest)")->required();
  cmd->add_option("--prompt", args->prompt, "One prompt; the completion goes to stdout");
  cmd->add_option("--prompts", args->prompts, "JSONL of {\"id\", \"prompt\" | \"messages\"} (batch mode)");
  cmd->add_option("--out", args->out, "Batch mode: JSONL of {\"id\", \"sample\", \"completion\"} for trex eval run");
  cmd->add_option("--max-tokens", args->max_tokens, "New tokens at most")->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-p", args->top_p, "Nucleus mass")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Sampling seed (sample s uses seed + s)")->capture_default_str();
  cmd->add_option("--samples", args->samples, "Completions per prompt (batch mode)")->capture_default_str();
  cmd->add_option("--format", args->format, "auto | chat | text")->capture_default_str();
  cmd->add_option("--model-config", args->model_config, "Model TOML: checked against the checkpoint's recorded model config; names the model of an older checkpoint whose train config has moved");
  cmd->add_flag("--quiet", args->quiet, "No progress bar");
  cmd->callback([args, action] { *action = [args] { return run_generate(*args); }; });
}

const CommandRegistration kGenerateRegistration(90, add_generate);

}  // namespace

}  // namespace trex::cli
