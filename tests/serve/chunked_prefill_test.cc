// Chunked prefill in the engine: a prompt of more than BatchDecoder::kLanePrefillMaxTokens
// tokens is read a chunk per step beside the running streams. They keep streaming while it is
// read, a short prompt admitted with it has its first token before the long one's, the long
// one's tokens do not depend on the chunk or on what runs beside it, and a request cancelled
// while its prompt is being read frees its slot for the next. With --prefill-chunk 0 such a
// prompt is prefilled whole on admission. A step that fails while a prompt is read ends the
// requests in that step, not a prompt waiting for its turn to be read.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "model/random_ids.h"
#include "model/tiny_config.h"
#include "trex/model/batch_decoder.h"
#include "trex/model/transformer.h"
#include "trex/serve/engine.h"

namespace trex::serve {
namespace {

using model::test_util::random_ids;

GenerationParams request(std::vector<int32_t> prompt, int64_t max_tokens, uint64_t seed) {
  GenerationParams p;
  p.prompt = std::move(prompt);
  p.temperature = 0.8;
  p.seed = seed;
  p.max_tokens = max_tokens;
  return p;
}

// Every event of g until its end: the tokens, and the finish reason.
std::pair<std::vector<int32_t>, std::string> read_all(Generation& g) {
  std::vector<int32_t> ids;
  for (;;) {
    std::optional<GenerationEvent> e = g.next();
    if (!e) return {ids, "no event"};
    if (e->kind == GenerationEvent::kEnd) return {ids, e->finish_reason};
    if (e->kind == GenerationEvent::kToken) ids.push_back(e->token.id);
  }
}

// Events already queued in g (without waiting), the tokens among them counted.
int64_t queued_tokens(Generation& g, bool* ended) {
  int64_t n = 0;
  while (std::optional<GenerationEvent> e = g.next(0)) {
    if (e->kind == GenerationEvent::kToken) ++n;
    if (e->kind == GenerationEvent::kEnd) *ended = true;
  }
  return n;
}

// A gate the scheduler waits at before a step until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !closed; });
  }
  void set(bool c) {
    {
      std::lock_guard<std::mutex> lock(mu);
      closed = c;
    }
    cv.notify_all();
  }
};

constexpr int64_t kLong = model::BatchDecoder::kLanePrefillMaxTokens + 36;  // 100 tokens

TEST(ChunkedPrefill, StreamsKeepStreamingAndAShortPromptGoesFirstWhileALongOneIsRead) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 3, false);
  const std::vector<int32_t> long_prompt = random_ids(kLong, c.vocab, 1);
  // The long request's tokens alone, read in chunks of 1 and of 256 (the whole prompt a step):
  // the same, as reading it token by token gives; and with chunk 0, prefilled whole.
  std::vector<int32_t> alone;
  for (int chunk : {1, 256, 0}) {
    EngineOptions eo;
    eo.slots = 2;
    eo.context = 256;
    eo.prefill_chunk = chunk;
    Engine engine(m, "", eo);
    std::shared_ptr<Generation> g = engine.submit(request(long_prompt, 6, 11));
    ASSERT_TRUE(g);
    auto [ids, reason] = read_all(*g);
    EXPECT_EQ(reason, "length");
    ASSERT_EQ(ids.size(), 6u);
    if (chunk == 1) {
      alone = ids;
      EXPECT_EQ(engine.stats().prefill_chunks, kLong);
    } else if (chunk == 0) {
      // Prefilled whole on admission: no chunk went through a step (its tokens are those of a
      // whole prefill, which differ from token by token by rounding, so they are not compared).
      EXPECT_EQ(engine.stats().prefill_chunks, 0);
    } else {
      EXPECT_EQ(ids, alone) << "chunk " << chunk;
      EXPECT_EQ(engine.stats().prefill_chunks, 1);
    }
    EXPECT_EQ(engine.stats().prompt_tokens, kLong);
  }

  // The scheduler waits at the gate before every step until the test opens it: closed from the
  // start, it holds the scheduler before its first step, with the stream below admitted and its
  // first token (from its prefill) sent, while the long and the short request arrive.
  Gate gate;
  gate.set(true);
  // A second gate holds the scheduler before step kHoldStep, well after the long prompt's 13
  // steps and before the stream's 60 tokens can run out, so what the test reads below does not
  // depend on how long this thread waits for a CPU (on a loaded machine the stream used to end
  // before the test looked).
  constexpr int64_t kHoldStep = 40;
  Gate hold;
  hold.set(true);
  EngineOptions eo;
  eo.slots = 3;
  eo.context = 256;
  eo.prefill_chunk = 8;  // 100 tokens: 13 steps
  eo.before_step_for_testing = [&](int64_t step) {
    gate.wait();
    if (step >= kHoldStep) hold.wait();
  };
  Engine engine(m, "", eo);
  // Opens both gates however the test leaves (an ASSERT included), before the engine stops.
  struct OpenOnExit {
    Gate& a;
    Gate& b;
    ~OpenOnExit() {
      a.set(false);
      b.set(false);
    }
  } open_on_exit{gate, hold};
  // A stream that is decoding when the long prompt arrives.
  std::shared_ptr<Generation> running = engine.submit(request(random_ids(3, c.vocab, 2), 60, 21));
  ASSERT_TRUE(running);
  std::optional<GenerationEvent> first = running->next();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->kind, GenerationEvent::kToken);
  std::shared_ptr<Generation> long_gen = engine.submit(request(long_prompt, 6, 11));
  std::shared_ptr<Generation> short_gen = engine.submit(request(random_ids(5, c.vocab, 3), 4, 31));
  ASSERT_TRUE(long_gen && short_gen);
  // Step 1 is the stream's alone; both requests are admitted at the scheduler's next turn.
  gate.set(false);
  std::optional<GenerationEvent> long_first = long_gen->next();
  ASSERT_TRUE(long_first);
  ASSERT_EQ(long_first->kind, GenerationEvent::kToken);
  // By the long request's first token the short one had its first (it was prefilled when
  // admitted, not after the long prompt), and the running stream had a token per step of the
  // long prompt's reading (13 steps, and step 1 before them).
  bool short_ended = false, ended = false;
  EXPECT_GE(queued_tokens(*short_gen, &short_ended), 1) << "the short prompt waited for the long one";
  EXPECT_GE(queued_tokens(*running, &ended), (kLong + 7) / 8 + 1) << "the stream stalled";
  EXPECT_FALSE(ended);
  hold.set(false);
  // The long request's tokens are those it gets alone.
  auto [rest, reason] = read_all(*long_gen);
  EXPECT_EQ(reason, "length");
  rest.insert(rest.begin(), long_first->token.id);
  EXPECT_EQ(rest, alone);
  if (!ended) {
    EXPECT_EQ(read_all(*running).second, "length");
  }
  if (!short_ended) {
    EXPECT_EQ(read_all(*short_gen).second, "length");
  }
}

TEST(ChunkedPrefill, ARequestCancelledWhileItsPromptIsReadFreesItsSlot) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 4, false);
  const std::vector<int32_t> after_prompt = random_ids(7, c.vocab, 5);
  // What the next request gets on a fresh engine.
  std::vector<int32_t> want;
  {
    EngineOptions eo;
    eo.slots = 1;
    eo.context = 256;
    Engine engine(m, "", eo);
    want = read_all(*engine.submit(request(after_prompt, 5, 41))).first;
    ASSERT_EQ(want.size(), 5u);
  }
  // The batch loop's hook gets the generation through a future: submit() returns after the loop
  // may already have stepped, so reading a plain variable the test assigns would race with it.
  std::promise<std::shared_ptr<Generation>> submitted;
  std::shared_future<std::shared_ptr<Generation>> long_gen_ready = submitted.get_future().share();
  EngineOptions eo;
  eo.slots = 1;  // the next request can only run in the cancelled one's slot
  eo.queue_limit = 0;
  eo.context = 256;
  eo.prefill_chunk = 10;
  // The client goes away after two chunks of its prompt (before the third step).
  eo.before_step_for_testing = [long_gen_ready](int64_t step) {
    if (step == 3 && long_gen_ready.get()) long_gen_ready.get()->cancel();
  };
  Engine engine(m, "", eo);
  std::shared_ptr<Generation> long_gen = engine.submit(request(random_ids(kLong, c.vocab, 6), 8, 51));
  submitted.set_value(long_gen);
  ASSERT_TRUE(long_gen);
  auto [ids, reason] = read_all(*long_gen);
  EXPECT_EQ(reason, "cancelled");
  EXPECT_TRUE(ids.empty());
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.prefill_chunks, 2);
  EXPECT_EQ(st.prompt_tokens, 0) << "a prompt not read to its end is not counted";
  // Its slot is free (no waiting room: refused otherwise), and starts empty.
  std::shared_ptr<Generation> next = engine.submit(request(after_prompt, 5, 41));
  ASSERT_TRUE(next) << "the cancelled request's slot was not freed";
  auto [got, why] = read_all(*next);
  EXPECT_EQ(why, "length");
  EXPECT_EQ(got, want);
}

TEST(ChunkedPrefill, AStepThatFailsWhileAPromptIsReadEndsOnlyTheRequestsInIt) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 5, false);
  const std::vector<int32_t> first_prompt = random_ids(kLong, c.vocab, 7);
  const std::vector<int32_t> second_prompt = random_ids(kLong, c.vocab, 8);
  // What the second long request gets on an engine of its own.
  std::vector<int32_t> want;
  {
    EngineOptions eo;
    eo.slots = 1;
    eo.context = 256;
    eo.prefill_chunk = 10;
    Engine engine(m, "", eo);
    want = read_all(*engine.submit(request(second_prompt, 5, 61))).first;
    ASSERT_EQ(want.size(), 5u);
  }
  EngineOptions eo;
  eo.slots = 3;
  eo.context = 256;
  eo.prefill_chunk = 10;  // the first long prompt takes each step's whole chunk for 10 steps
  eo.fail_at_step = 3;
  // The scheduler holds before step 1 until both long requests are queued, so they are
  // admitted by step 2 whatever this thread's speed.
  Gate gate;
  gate.set(true);
  eo.before_step_for_testing = [&](int64_t) { gate.wait(); };
  Engine engine(m, "", eo);
  struct OpenOnExit {
    Gate& g;
    ~OpenOnExit() { g.set(false); }
  } open_on_exit{gate};
  // A stream decoding from its admission on: in every step, step 3 included.
  std::shared_ptr<Generation> stream = engine.submit(request(random_ids(3, c.vocab, 9), 50, 71));
  ASSERT_TRUE(stream);
  // The first long prompt is read a chunk a step from the step after its admission on (so in
  // step 3); the second, admitted after it, waits for it to be read: no step before the 11th
  // has a chunk of it.
  std::shared_ptr<Generation> first = engine.submit(request(first_prompt, 5, 51));
  std::shared_ptr<Generation> second = engine.submit(request(second_prompt, 5, 61));
  ASSERT_TRUE(first && second);
  gate.set(false);
  auto [first_ids, first_reason] = read_all(*first);
  EXPECT_EQ(first_reason, "error");
  EXPECT_TRUE(first_ids.empty()) << "a prompt not read to its end has no token";
  auto [stream_ids, stream_reason] = read_all(*stream);
  EXPECT_EQ(stream_reason, "error");
  EXPECT_LT(stream_ids.size(), 50u);
  // The second prompt was not in the failed step: it is read to its end and gets what it gets
  // alone.
  auto [got, why] = read_all(*second);
  EXPECT_EQ(why, "length");
  EXPECT_EQ(got, want);
  EXPECT_EQ(engine.stats().prompt_tokens, 3 + kLong) << "the failed prompt is not counted";
}

}  // namespace
}  // namespace trex::serve
