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

}  // namespace
}  // namespace trex::serve
