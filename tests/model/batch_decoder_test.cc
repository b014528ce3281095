// BatchDecoder: sequences decoded together give each sequence bit for bit what it gets decoded
// alone, whatever the mix of positions in a step, and slots are
// independent of one another.
#include "trex/model/batch_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/generator.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

std::vector<int32_t> random_ids(int64_t n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = int32_t(rng() % uint64_t(vocab));
  return ids;
}

void expect_close(std::span<const float> got, std::span<const float> want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (size_t v = 0; v < want.size(); ++v) differ += got[v] != want[v];
  EXPECT_EQ(differ, 0u) << what << ": logits differ from the lone generator's";
}

TEST(BatchDecoder, SequencesDecodedTogetherEqualEachDecodedAlone) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128");
  Transformer model(c, 5, false);
  // Three sequences at different positions: prompts of 1, 7 and 20 tokens, then 140 steps
  // together (past the window, several ratio-4 blocks and one ratio-128 entry).
  const std::vector<std::vector<int32_t>> prompts = {
      random_ids(1, c.vocab, 1), random_ids(7, c.vocab, 2), random_ids(20, c.vocab, 3)};
  const int64_t steps = 140;
  std::vector<std::vector<int32_t>> feed;
  for (int s = 0; s < 3; ++s) feed.push_back(random_ids(steps, c.vocab, 10 + uint64_t(s)));

  BatchDecoder batch(model, 4);
  std::vector<std::unique_ptr<Generator>> alone;
  for (int s = 0; s < 3; ++s) alone.push_back(std::make_unique<Generator>(model));
  const int slots[3] = {3, 0, 2};  // any slots, in any order
  for (int s = 0; s < 3; ++s) {
    std::span<const float> a = alone[size_t(s)]->prefill(prompts[size_t(s)]);
    std::vector<float> want(a.begin(), a.end());
    expect_close(batch.prefill(slots[s], prompts[size_t(s)]), want, "prefill");
  }
  for (int64_t t = 0; t < steps; ++t) {
    // Every third step one sequence sits out, so the batch changes size and makeup.
    std::vector<int> which;
    std::vector<int32_t> ids;
    for (int s = 0; s < 3; ++s)
      if ((t + s) % 3 != 0 || t % 2 == 0) {
        which.push_back(s);
        ids.push_back(feed[size_t(s)][size_t(t)]);
      }
    std::vector<int> slot_ids;
    for (int s : which) slot_ids.push_back(slots[s]);
    std::span<const float> got = batch.step(slot_ids, ids);
    ASSERT_EQ(got.size(), which.size() * size_t(c.vocab));
    std::vector<float> rows(got.begin(), got.end());
    for (size_t b = 0; b < which.size(); ++b) {
      std::span<const float> want = alone[size_t(which[b])]->step(ids[b]);
      expect_close(std::span<const float>(rows).subspan(b * size_t(c.vocab), size_t(c.vocab)),
                   want, "step");
    }
  }
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(batch.position(slots[s]), alone[size_t(s)]->position());
  EXPECT_EQ(batch.position(1), 0);
}

TEST(BatchDecoder, ResettingOneSlotLeavesTheOthers) {
  ModelConfig c = test_util::tiny_v4_config("0, 4");
  Transformer model(c, 6, false);
  const std::vector<int32_t> p = random_ids(9, c.vocab, 4);
  BatchDecoder batch(model, 2);
  batch.prefill(0, p);
  batch.prefill(1, p);
  batch.reset(1);
  EXPECT_EQ(batch.position(1), 0);
  EXPECT_EQ(batch.position(0), 9);
  // Slot 0 continues as a lone generator would; slot 1 starts over.
  Generator g(model);
  g.prefill(p);
  const int s0[1] = {0};
  const int32_t next = 3;
  std::span<const float> got = batch.step(s0, std::span<const int32_t>(&next, 1));
  std::vector<float> rows(got.begin(), got.end());
  std::span<const float> want = g.step(next);
  for (size_t v = 0; v < want.size(); ++v) EXPECT_EQ(rows[v], want[v]) << v;  // same path: same bits
}

TEST(BatchDecoder, BadCallsAreInputErrors) {
  ModelConfig c = test_util::tiny_v4_config("0");
  Transformer model(c, 1, false);
  BatchDecoder batch(model, 2);
  const int two[2] = {0, 1};
  const int32_t one_id[1] = {1};
  EXPECT_THROW(batch.step(two, one_id), InputError);                 // lengths differ
  const int bad_slot[1] = {2};
  EXPECT_THROW(batch.step(bad_slot, one_id), InputError);            // no such slot
  const int32_t bad_id[1] = {c.vocab};
  const int s0[1] = {0};
  EXPECT_THROW(batch.step(s0, bad_id), InputError);                  // id outside the vocabulary
  EXPECT_THROW(batch.prefill(0, std::span<const int32_t>()), InputError);
  EXPECT_THROW(BatchDecoder(model, 0), InputError);
}

}  // namespace
}  // namespace trex::model
