// The engine's admission: a client that asks again as soon as it has its end event is admitted
// even with no waiting room (queue 0), because a finished request's slot counts as free from
// the moment its end is sent (before, it stayed taken until the end of the engine's step, and
// such a client was refused: serve_bench crashed on the refusal about half of its runs); and a
// request's excluded ids (number slots it cannot fill), its own in a shared batch.
#include "trex/serve/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/transformer.h"
#include "trex/util/error.h"

namespace trex::serve {
namespace {

TEST(Engine, AClientThatAsksAgainOnItsEndIsAdmittedWithNoWaitingRoom) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 1, false);
  EngineOptions eo;
  eo.slots = 3;
  eo.queue_limit = 0;
  eo.context = 64;
  Engine engine(m, "", eo);
  for (int round = 0; round < 30; ++round) {
    std::vector<std::shared_ptr<Generation>> gens;
    for (int k = 0; k < eo.slots; ++k) {
      GenerationParams p;
      p.prompt = {1, int32_t(2 + k), int32_t(3 + round)};
      p.temperature = 0;
      p.max_tokens = 1 + (round + k) % 3;
      gens.push_back(engine.submit(std::move(p)));
      ASSERT_TRUE(gens.back()) << "round " << round << ", client " << k << " refused";
    }
    for (auto& g : gens)
      for (;;) {
        std::optional<GenerationEvent> e = g->next();
        ASSERT_TRUE(e);
        if (e->kind == GenerationEvent::kEnd) {
          EXPECT_EQ(e->finish_reason, "length");
          break;
        }
      }
  }
}

// next(timeout, ready): a stream waiting for an interval's tokens is woken when `ready` events
// are queued, or at the end when fewer remain; it gets every event, in order, as next() one at a
// time does (the same tokens as a second request with the same seed read one by one).
TEST(Engine, WaitingForSeveralEventsWakesWhenTheyAreAllQueuedOrAtTheEnd) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 1, false);
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 64;
  Engine engine(m, "", eo);
  auto request = [&] {
    GenerationParams p;
    p.prompt = {1, 5, 9};
    p.temperature = 0.8;
    p.seed = 7;
    p.max_tokens = 10;  // 10 tokens then the end: waits of 4, 4, then 2 tokens and the end
    return engine.submit(std::move(p));
  };
  std::vector<int32_t> one_by_one;
  {
    std::shared_ptr<Generation> g = request();
    ASSERT_TRUE(g);
    for (std::optional<GenerationEvent> e; (e = g->next()) && e->kind == GenerationEvent::kToken;)
      one_by_one.push_back(e->token.id);
  }
  ASSERT_EQ(one_by_one.size(), 10u);
  std::shared_ptr<Generation> g = request();
  ASSERT_TRUE(g);
  std::vector<int32_t> grouped;
  bool ended = false;
  while (!ended) {
    std::optional<GenerationEvent> e = g->next(-1, 4);  // no timeout: the end must wake it
    ASSERT_TRUE(e);
    // Woken with four events queued, or with the end among them: all are there at once.
    int queued = 1;
    for (;;) {
      if (e->kind == GenerationEvent::kEnd) {
        EXPECT_EQ(e->finish_reason, "length");
        ended = true;
        break;
      }
      grouped.push_back(e->token.id);
      if (queued == 4) break;
      e = g->next(0);
      ASSERT_TRUE(e) << "woken with " << queued << " of 4 events queued and no end";
      ++queued;
    }
  }
  EXPECT_EQ(grouped, one_by_one);
}

// excluded_ids: each request's own. Beside a request without exclusions, greedy, one that
// excludes the ids the other draws never draws them; excluding every id that may be drawn is
// refused at submit (a draw that threw would end every request prefilled with it), not drawn.
TEST(Engine, ExcludedIdsAreARequestsOwnAndExcludingEveryIdIsRefused) {
  const model::ModelConfig c = model::test_util::tiny_v4_config();
  model::Transformer m(c, 1, false);
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 64;
  Engine engine(m, "", eo);
  auto run = [&](std::vector<int32_t> excluded) {
    GenerationParams p;
    p.prompt = {1, 5, 9};
    p.temperature = 0;
    p.max_tokens = 12;
    p.excluded_ids = std::move(excluded);
    return engine.submit(std::move(p));
  };
  auto tokens = [](const std::shared_ptr<Generation>& g) {
    std::vector<int32_t> out;
    for (std::optional<GenerationEvent> e; (e = g->next()) && e->kind == GenerationEvent::kToken;)
      out.push_back(e->token.id);
    return out;
  };
  const std::vector<int32_t> free_run = tokens(run({}));
  ASSERT_EQ(free_run.size(), 12u);
  // Together in one batch: the free one as alone, the other without any of its tokens.
  std::shared_ptr<Generation> a = run({}), b = run(free_run);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(tokens(a), free_run);
  const std::vector<int32_t> masked = tokens(b);
  ASSERT_EQ(masked.size(), 12u);
  for (int32_t id : masked) EXPECT_EQ(std::count(free_run.begin(), free_run.end(), id), 0) << id;
  std::vector<int32_t> every;
  for (int32_t id = 0; id < c.vocab; ++id) every.push_back(id);
  EXPECT_THROW(run(every), InputError);
  GenerationParams p;
  p.prompt = {1, 5, 9};
  p.vocab_limit = 10;
  p.excluded_ids = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0};
  EXPECT_THROW(engine.submit(std::move(p)), InputError);
}

}  // namespace
}  // namespace trex::serve
