// The engine's admission: a client that asks again as soon as it has its end event is admitted
// even with no waiting room (queue 0), because a finished request's slot counts as free from
// the moment its end is sent (before, it stayed taken until the end of the engine's step, and
// such a client was refused: serve_bench crashed on the refusal about half of its runs).
#include "trex/serve/engine.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/transformer.h"

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

}  // namespace
}  // namespace trex::serve
