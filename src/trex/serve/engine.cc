// Engine: the scheduler loop of continuous batching (see engine.h).
#include "trex/serve/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>

#include "trex/model/sampling.h"
#include "trex/util/error.h"

namespace trex::serve {

namespace {

using Clock = std::chrono::steady_clock;

// log softmax of logits[id], and the k most likely ids with theirs (descending, ties to the
// lower id), computed in double as sample_token's softmax is.
TokenLogprob logprob_of(std::span<const float> logits, int32_t id, int k) {
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, double(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  TokenLogprob t;
  t.id = id;
  t.logprob = size_t(id) < logits.size() ? double(logits[size_t(id)]) - lse : -INFINITY;
  if (k > 0) {
    std::vector<int32_t> order(logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
    const size_t kk = std::min(order.size(), size_t(k));
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(kk), order.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[size_t(a)] != logits[size_t(b)]
                                   ? logits[size_t(a)] > logits[size_t(b)]
                                   : a < b;
                      });
    for (size_t i = 0; i < kk; ++i)
      t.top.emplace_back(order[i], double(logits[size_t(order[i])]) - lse);
  }
  return t;
}

}  // namespace

std::optional<GenerationEvent> Generation::next(int timeout_ms, size_t ready) {
  std::unique_lock<std::mutex> lock(mu_);
  ready = std::max<size_t>(ready, 1);
  const auto enough = [&] {
    return events_.size() >= ready ||
           (!events_.empty() && events_.back().kind == GenerationEvent::kEnd);
  };
  wake_at_ = ready;
  if (timeout_ms < 0) {
    cv_.wait(lock, enough);
  } else {
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), enough);
  }
  wake_at_ = 1;
  if (events_.empty()) return std::nullopt;
  GenerationEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void Generation::push(GenerationEvent e) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = e.kind == GenerationEvent::kEnd || events_.size() + 1 >= wake_at_;
    events_.push_back(std::move(e));
  }
  if (wake) cv_.notify_all();
}

struct Engine::Job {
  GenerationParams p;
  std::shared_ptr<Generation> out = std::make_shared<Generation>();
  std::mt19937_64 rng;
  int64_t budget = 0;     // tokens it may still generate in all
  int64_t generated = 0;
  int32_t next = -1;      // the token to feed at the next step
  bool done = false;
  // Chunked prefill: prompt tokens fed so far while it is below the prompt's size (the job
  // takes a chunk of them per step, in order of admission, and no token is drawn until then).
  size_t fed = 0;
  bool prefilling = false;
  uint64_t order = 0;     // when it was admitted
};

Engine::Engine(const model::Transformer& model, const std::string& weights_path,
               const EngineOptions& o)
    : decoder_(model, o.slots), queue_limit_(o.queue_limit), fail_at_step_(o.fail_at_step),
      prefill_chunk_(o.prefill_chunk), before_step_(o.before_step_for_testing) {
  if (o.queue_limit < 0) throw InputError::field("queue", "must be at least 0");
  if (o.prefill_chunk < 0) throw InputError::field("prefill-chunk", "must be at least 0");
  if (!weights_path.empty()) decoder_.load_routing_state(weights_path);
  context_ = o.context > 0 ? o.context : model.config().train_seq_len;
  if (context_ < 2) throw InputError::field("context", "must be at least 2 tokens");
  running_.resize(size_t(o.slots));
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& j : waiting_) finish(*j, "cancelled");
  for (auto& j : running_)
    if (j && !j->done) finish(*j, "cancelled");
}

std::shared_ptr<Generation> Engine::submit(GenerationParams p) {
  if (p.prompt.empty()) throw InputError::field("prompt", "is empty");
  if (int64_t(p.prompt.size()) >= context_)
    throw InputError::field("prompt", std::to_string(p.prompt.size()) +
                                          " tokens; this model's context is " +
                                          std::to_string(context_) + " tokens");
  for (int32_t id : p.prompt)
    if (id < 0 || id >= decoder_.vocab())
      throw InputError::field("prompt", "token id " + std::to_string(id) + " outside [0, " +
                                            std::to_string(decoder_.vocab()) + ")");
  if (!(p.top_p > 0 && p.top_p <= 1)) throw InputError::field("top_p", "must be in (0, 1]");
  if (p.max_tokens < 0) throw InputError::field("max_tokens", "must be at least 0");
  {
    // Checked here, not when drawing: a draw that throws ends every request prefilled with it.
    const int64_t limit = p.vocab_limit > 0 ? std::min<int64_t>(p.vocab_limit, decoder_.vocab()) : decoder_.vocab();
    std::vector<int32_t> ex;
    for (int32_t id : p.excluded_ids)
      if (id >= 0 && id < limit) ex.push_back(id);
    std::sort(ex.begin(), ex.end());
    if (int64_t(std::unique(ex.begin(), ex.end()) - ex.begin()) >= limit)
      throw InputError::field("excluded_ids", "every id that may be drawn is excluded");
  }
  auto job = std::make_unique<Job>();
  job->rng.seed(p.seed);
  job->budget = std::min<int64_t>(p.max_tokens, context_ - int64_t(p.prompt.size()));
  job->p = std::move(p);
  std::shared_ptr<Generation> out = job->out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A free slot takes a request at the next step; beyond those, queue_limit may wait.
    const int64_t free_slots =
        std::count_if(running_.begin(), running_.end(), [](const auto& r) { return !r || r->done; });
    if (draining_ || stop_ || int64_t(waiting_.size()) >= queue_limit_ + free_slots)
      return nullptr;
    waiting_.push_back(std::move(job));
  }
  cv_.notify_all();
  return out;
}

void Engine::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  draining_ = true;
  idle_cv_.wait(lock, [&] {
    return waiting_.empty() &&
           std::none_of(running_.begin(), running_.end(), [](const auto& r) { return bool(r); });
  });
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = stats_;
  s.waiting = int64_t(waiting_.size());
  s.running = std::count_if(running_.begin(), running_.end(), [](const auto& r) { return bool(r); });
  return s;
}

void Engine::finish(Job& job, const std::string& reason, const std::string& error) {
  if (job.done) return;
  {
    // Under the lock, before the client can see its end: submit() counts a done job's slot as
    // free, so a client that asks again as soon as it has its answer is not refused for a slot
    // that the loop has yet to clear.
    std::lock_guard<std::mutex> lock(mu_);
    job.done = true;
  }
  GenerationEvent e;
  e.kind = GenerationEvent::kEnd;
  e.finish_reason = reason;
  e.error = error;
  job.out->push(std::move(e));
}

// Samples the job's next token from `logits` and hands it over; false when the job ended.
bool Engine::deliver(Job& job, std::span<const float> logits) {
  const double u = double(job.rng() >> 11) * 0x1.0p-53;
  const size_t limit = job.p.vocab_limit > 0
                           ? std::min(logits.size(), size_t(job.p.vocab_limit))
                           : logits.size();
  const int32_t id = model::sample_token(logits.first(limit), job.p.temperature, job.p.top_p, u,
                                           job.p.excluded_ids);
  if (std::find(job.p.stop_ids.begin(), job.p.stop_ids.end(), id) != job.p.stop_ids.end()) {
    finish(job, "stop");
    return false;
  }
  GenerationEvent e;
  e.kind = GenerationEvent::kToken;
  e.token = job.p.token_logprobs ? logprob_of(logits.first(limit), id, job.p.logprobs)
                                 : TokenLogprob{id, 0, {}};
  job.out->push(std::move(e));
  ++job.generated;
  if (job.generated >= job.budget) {
    finish(job, "length");
    return false;
  }
  job.next = id;
  return true;
}

void Engine::loop() {
  std::vector<int> slots, runs;  // the step's rows' slots, and each run's slot
  std::vector<int32_t> ids;
  for (;;) {
    std::vector<int> fresh;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || !waiting_.empty() ||
               std::any_of(running_.begin(), running_.end(), [](const auto& r) { return bool(r); });
      });
      if (stop_) return;
      for (size_t s = 0; s < running_.size() && !waiting_.empty(); ++s) {
        if (running_[s]) continue;
        running_[s] = std::move(waiting_.front());
        waiting_.pop_front();
        running_[s]->order = admitted_++;
        fresh.push_back(int(s));
      }
    }
    const Clock::time_point t0 = Clock::now();
    int64_t prompt_tokens = 0, tokens = 0, steps = 0, chunks = 0;
    // Newly admitted requests: prefill, then their first token. Plain prompts are prefilled
    // together (on the decoder's lanes at once); those that ask for prompt log-probabilities go
    // token by token, one request at a time.
    std::vector<int> plain;
    std::vector<std::span<const int32_t>> plain_prompts;
    for (int s : fresh) {
      Job& job = *running_[size_t(s)];
      if (job.out->cancelled()) {
        finish(job, "cancelled");
        continue;
      }
      if (!job.p.prompt_logprobs && prefill_chunk_ > 0 &&
          int64_t(job.p.prompt.size()) > model::BatchDecoder::kLanePrefillMaxTokens) {
        // Read through the steps, a chunk at a time, from an empty slot.
        decoder_.reset(s);
        job.prefilling = true;
        job.fed = 0;
        continue;
      }
      if (!job.p.prompt_logprobs) {
        plain.push_back(s);
        plain_prompts.emplace_back(job.p.prompt);
        continue;
      }
      try {
        decoder_.reset(s);
        const std::vector<int32_t>& pr = job.p.prompt;
        std::span<const float> logits;
        {
          GenerationEvent e;
          e.kind = GenerationEvent::kPromptLogprobs;
          logits = decoder_.prefill(s, std::span<const int32_t>(pr.data(), 1));
          const int one[1] = {s};
          const size_t limit = job.p.vocab_limit > 0 ? size_t(job.p.vocab_limit) : logits.size();
          for (size_t j = 1; j < pr.size(); ++j) {
            e.prompt.push_back(logprob_of(logits.first(std::min(limit, logits.size())), pr[j],
                                          job.p.logprobs));
            logits = decoder_.step(one, std::span<const int32_t>(&pr[j], 1));
          }
          job.out->push(std::move(e));
        }
        prompt_tokens += int64_t(pr.size());
        if (job.budget <= 0) {
          finish(job, "length");
        } else {
          const int64_t before = job.generated;
          deliver(job, logits);
          tokens += job.generated - before;
        }
      } catch (const std::exception& e) {
        finish(job, "error", e.what());
      }
    }
    if (!plain.empty()) {
      try {
        for (int s : plain) decoder_.reset(s);
        std::span<const float> logits = decoder_.prefill_many(plain, plain_prompts);
        const size_t V = size_t(decoder_.vocab());
        for (size_t i = 0; i < plain.size(); ++i) {
          Job& job = *running_[size_t(plain[i])];
          prompt_tokens += int64_t(job.p.prompt.size());
          if (job.budget <= 0) {
            finish(job, "length");
          } else {
            const int64_t before = job.generated;
            deliver(job, logits.subspan(i * V, V));
            tokens += job.generated - before;
          }
        }
      } catch (const std::exception& e) {
        for (int s : plain) finish(*running_[size_t(s)], "error", e.what());
      }
    }
    // One batched step for every running request: a token of each decoding one, then the
    // next chunks of the prompts being read (prefill_chunk tokens a step in all, the earliest
    // admitted first), each a run of rows of its slot.
    if (before_step_) before_step_(step_count_ + 1);
    slots.clear();
    ids.clear();
    runs.clear();
    std::vector<Job*> reading;
    for (size_t s = 0; s < running_.size(); ++s) {
      Job* job = running_[s].get();
      if (!job || job->done) continue;
      if (job->out->cancelled()) {
        finish(*job, "cancelled");
        continue;
      }
      if (job->prefilling) {
        reading.push_back(job);
        continue;
      }
      slots.push_back(int(s));
      ids.push_back(job->next);
      runs.push_back(int(s));
    }
    std::sort(reading.begin(), reading.end(), [](Job* a, Job* b) { return a->order < b->order; });
    size_t chunk_left = size_t(prefill_chunk_);
    for (Job* job : reading) {
      if (chunk_left == 0) break;
      const int s = int(std::find_if(running_.begin(), running_.end(),
                                     [&](const auto& r) { return r.get() == job; }) -
                        running_.begin());
      const size_t n = std::min(chunk_left, job->p.prompt.size() - job->fed);
      for (size_t k = 0; k < n; ++k) {
        slots.push_back(s);
        ids.push_back(job->p.prompt[job->fed + k]);
      }
      job->fed += n;
      chunk_left -= n;
      runs.push_back(s);
      ++chunks;
    }
    if (!slots.empty()) {
      try {
        if (++step_count_ == fail_at_step_) throw std::runtime_error("injected failure at step " + std::to_string(step_count_));
        std::span<const float> logits = decoder_.step(slots, ids);
        const size_t V = size_t(decoder_.vocab());
        for (size_t r = 0; r < runs.size(); ++r) {
          Job& job = *running_[size_t(runs[r])];
          if (job.prefilling) {
            if (job.fed < job.p.prompt.size()) continue;  // more of its prompt next step
            // Its prompt is read: the logits of its last token draw its first one.
            job.prefilling = false;
            prompt_tokens += int64_t(job.p.prompt.size());
            if (job.budget <= 0) {
              finish(job, "length");
              continue;
            }
          }
          const int64_t before = job.generated;
          deliver(job, logits.subspan(r * V, V));
          tokens += job.generated - before;
        }
        ++steps;
      } catch (const std::exception& e) {
        for (int s : runs) finish(*running_[size_t(s)], "error", e.what());
      }
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.busy_seconds += dt;
      stats_.prompt_tokens += prompt_tokens;
      stats_.tokens += tokens;
      stats_.steps += steps;
      stats_.prefill_chunks += chunks;
      for (auto& r : running_)
        if (r && r->done) r.reset();
    }
    idle_cv_.notify_all();
  }
}

}  // namespace trex::serve
