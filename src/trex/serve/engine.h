// The serving engine: continuous batching of generation requests over one model.
//
// One scheduler thread owns a BatchDecoder with a fixed number of slots. Requests wait in a
// bounded queue; at every step the scheduler first admits waiting requests into free slots
// (prefilling each one's prompt), then advances every running request by one token in a single
// batched step, samples each row with that request's own seeded generator and hands the token to
// the request. A request that finishes (a stop id, its token budget, the context length, or its
// consumer saying stop) or is cancelled frees its slot at once, so a new request joins the
// running batch at the next step.
//
// Each request's tokens depend only on its prompt, sampling options and seed: the draw for token
// i is the i-th draw of mt19937_64(seed), as Generator::generate does, so a request served alone
// gives what `trex generate` gives, batched with others or not (BatchDecoder computes each row
// as it would alone).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trex/model/batch_decoder.h"

namespace trex::serve {

struct GenerationParams {
  std::vector<int32_t> prompt;   // not empty
  double temperature = 1.0;      // <= 0: greedy
  double top_p = 1.0;            // in (0, 1]
  uint64_t seed = 0;
  int64_t max_tokens = 16;       // new tokens at most (>= 0)
  std::vector<int32_t> stop_ids; // generation ends after one of these (not delivered)
  int64_t vocab_limit = 0;       // > 0: draw only ids below it
  // Never drawn (logit -inf, model::sample_token): a chat request's number slots that its
  // prompt has no number for (train::unfillable_slot_ids). Log-probabilities stay the model's.
  std::vector<int32_t> excluded_ids;
  // token_logprobs: each generated token carries its log-probability (under the model, before
  // temperature) and the `logprobs` most likely alternatives; prompt_logprobs: the same for
  // every prompt token after the first, in one event before the first generated token.
  bool token_logprobs = false;
  int logprobs = 0;
  bool prompt_logprobs = false;
};

// log p of a token and, when asked, the top alternatives at its position.
struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;
};

// What a request produces, in order: prompt log-probabilities (if asked), tokens, then one end.
struct GenerationEvent {
  enum Kind { kPromptLogprobs, kToken, kEnd } kind = kToken;
  TokenLogprob token;                       // kToken (logprob fields filled when asked)
  std::vector<TokenLogprob> prompt;         // kPromptLogprobs
  std::string finish_reason;                // kEnd: "stop" | "length" | "cancelled" | "error"
  std::string error;                        // kEnd with "error"
};

// One request as its consumer sees it: a queue of events filled by the scheduler.
class Generation {
 public:
  // Blocks until the next event (or `timeout_ms` passes: nullopt). With `ready` > 1 it waits
  // until that many events are queued or the end is (or the timeout passes with at least one
  // queued), then returns the first: a consumer that sends text every few tokens is then woken
  // once per few tokens, not once per token (at 8 streams, 8 wake-ups per batched step, each
  // taking a core from the step's lanes).
  std::optional<GenerationEvent> next(int timeout_ms = -1, size_t ready = 1);
  // Asks the scheduler to stop this request; its slot is freed at the next step.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  friend class Engine;
  void push(GenerationEvent e);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  size_t wake_at_ = 1;  // the waiter's `ready`: push() wakes it at this many events or an end
  std::atomic<bool> cancelled_{false};
};

struct EngineOptions {
  int slots = 8;            // sequences decoded together
  int queue_limit = 64;     // requests waiting for a slot before submit() refuses
  int64_t context = 0;      // prompt + generated tokens at most (0: the model's train_seq_len)
  // Chunked prefill: a prompt of more than BatchDecoder::kLanePrefillMaxTokens tokens joins the
  // running batch this many tokens a step (a run of rows of its slot), so the streams already
  // decoding keep streaming while it is read, and a short prompt admitted meanwhile is prefilled
  // at the next step instead of after it. 0: such a prompt is prefilled whole when admitted,
  // every stream waiting meanwhile. Its logits are those of feeding it token by token (the same
  // whatever the chunk, and whatever else runs); a whole prefill's differ by rounding. 64, not
  // 16: 16 reads a long prompt more slowly beside the streams, for little less stall (session
  // 17, loaded: 96.5 against 76.4 ms to its first token, gap 12.7 against 25.6 ms; against 72.7
  // ms whole). Alone, 64 a step takes the whole prefill's time (47.6 against 51.8 ms: the step
  // shares its experts over every lane). prefill_chunk_bench, docs/serve.md.
  int prefill_chunk = 64;
  // Fault injection for tests: > 0 makes the batched step with this number (1 = the first)
  // throw, so every request in it ends with "error" mid-generation as a decoder failure would.
  int64_t fail_at_step = 0;
  // Tests only: called on the scheduler thread before each batched step is put together, with
  // that step's number (1 = the first), so a test can hold the scheduler or cancel a request at
  // a known point of a prompt's reading.
  std::function<void(int64_t step)> before_step_for_testing;
};

struct EngineStats {
  int64_t steps = 0;            // batched decode steps
  int64_t tokens = 0;           // tokens generated
  int64_t prompt_tokens = 0;    // tokens prefilled
  int64_t prefill_chunks = 0;   // chunks of prompts fed through steps (chunked prefill)
  int64_t running = 0, waiting = 0;
  double busy_seconds = 0;      // time spent in prefill and steps
};

class Engine {
 public:
  Engine(const model::Transformer& model, const std::string& weights_path,
         const EngineOptions& options);
  ~Engine();  // stops the scheduler; unfinished requests end with "cancelled"
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int64_t context() const { return context_; }
  int vocab() const { return decoder_.vocab(); }

  // Queues a request. Returns nullptr when the queue is full or the engine is draining.
  // Throws InputError for an invalid request (empty prompt, a prompt of context() tokens or
  // more, an id outside the vocabulary, top_p outside (0, 1]).
  std::shared_ptr<Generation> submit(GenerationParams params);

  // Stops admitting; returns when every queued and running request has ended.
  void drain();
  EngineStats stats() const;

 private:
  struct Job;
  void loop();
  void finish(Job& job, const std::string& reason, const std::string& error = "");
  bool deliver(Job& job, std::span<const float> logits);

  model::BatchDecoder decoder_;
  int64_t context_ = 0;
  int queue_limit_ = 0;
  int64_t fail_at_step_ = 0;
  int64_t step_count_ = 0;  // batched steps tried (the scheduler thread's only)
  int prefill_chunk_ = 0;
  std::function<void(int64_t)> before_step_;
  uint64_t admitted_ = 0;   // requests admitted to a slot so far (their order, for chunks)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::unique_ptr<Job>> waiting_;
  std::vector<std::unique_ptr<Job>> running_;  // [slot], null when free
  bool stop_ = false, draining_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace trex::serve
