// Generator against Transformer::forward: incremental decoding with per-layer caches gives the
// full forward's logits at every position, past the window and across ratio-4 and ratio-128
// block boundaries; greedy generation continues the sequence the full forward predicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "trex/model/config.h"
#include "trex/model/generator.h"
#include "trex/model/transformer.h"
#include "trex/util/error.h"
#include "model/tiny_config.h"

namespace trex::model {
namespace {

// nano's structure (mHC 4 streams, hash-routed first layer, ratios 0 / 4 / 128) at small sizes.
ModelConfig small_config() {
  ModelConfig c = test_util::shrunk_nano_config();
  c.vocab = 96;
  c.ffn.routed_experts = 4;
  c.ffn.top_k = 2;
  c.ffn.expert_hidden = 24;
  c.ffn.hash_layers = 1;
  return c;
}

Batch one_document(const std::vector<int32_t>& ids) {
  Batch b;
  b.tokens = int64_t(ids.size());
  b.ids = ids;
  b.targets.assign(ids.size(), -1);
  for (size_t i = 0; i + 1 < ids.size(); ++i) b.targets[i] = ids[i + 1];
  b.docs = {{0, b.tokens}};
  return b;
}

TEST(Generator, IncrementalLogitsEqualTheFullForwardAtEveryPosition) {
  ModelConfig c = small_config();
  Transformer model(c, 7, /*with_mtp=*/false);
  const int64_t T = 300;  // two ratio-128 entries, 75 ratio-4 blocks, far past the window
  std::mt19937_64 rng(8);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int32_t& id : ids) id = int32_t(rng() % uint64_t(c.vocab));
  std::vector<float> full;
  model.forward(one_document(ids), &full);
  ASSERT_EQ(int64_t(full.size()), T * c.vocab);

  Generator gen(model);
  for (int64_t t = 0; t < T; ++t) {
    std::span<const float> step = gen.step(ids[size_t(t)]);
    ASSERT_EQ(int64_t(step.size()), int64_t(c.vocab));
    double err = 0, ref = 0;
    for (int64_t v = 0; v < c.vocab; ++v) {
      const double f = full[size_t(t * c.vocab + v)];
      err = std::max(err, std::abs(double(step[size_t(v)]) - f));
      ref = std::max(ref, std::abs(f));
    }
    ASSERT_LE(err, 1e-4 * ref + 1e-6) << "position " << t;
  }
  EXPECT_EQ(gen.position(), T);
  // A reset starts a new sequence: position 0 again gives row 0.
  gen.reset();
  std::span<const float> first = gen.step(ids[0]);
  for (int64_t v = 0; v < c.vocab; ++v)
    ASSERT_NEAR(first[size_t(v)], full[size_t(v)], 1e-4 * (std::abs(full[size_t(v)]) + 1));
}

TEST(Generator, BatchedPrefillThenStepsEqualTheFullForward) {
  ModelConfig c = small_config();
  Transformer model(c, 13, false);
  const int64_t T = 300, P = 150;  // the prompt ends inside a ratio-4 block, past a ratio-128 one
  std::mt19937_64 rng(14);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int32_t& id : ids) id = int32_t(rng() % uint64_t(c.vocab));
  std::vector<float> full;
  model.forward(one_document(ids), &full);
  Generator gen(model);
  auto check = [&](std::span<const float> got, int64_t t) {
    double err = 0, ref = 0;
    for (int64_t v = 0; v < c.vocab; ++v) {
      const double f = full[size_t(t * c.vocab + v)];
      err = std::max(err, std::abs(double(got[size_t(v)]) - f));
      ref = std::max(ref, std::abs(f));
    }
    ASSERT_LE(err, 1e-4 * ref + 1e-6) << "position " << t;
  };
  check(gen.prefill(std::span<const int32_t>(ids.data(), size_t(P))), P - 1);
  EXPECT_EQ(gen.position(), P);
  for (int64_t t = P; t < T; ++t) check(gen.step(ids[size_t(t)]), t);
}

TEST(Generator, GreedyGenerationFollowsTheFullForwardAndStops) {
  ModelConfig c = small_config();
  Transformer model(c, 9, false);
  std::vector<int32_t> prompt = {5, 17, 3, 42, 8, 8, 60};
  Generator gen(model);
  SamplingOptions o;
  o.max_tokens = 12;
  std::vector<int32_t> out = gen.generate(prompt, o);
  ASSERT_EQ(out.size(), 12u);
  // Each greedy token is the argmax of the full forward over everything before it.
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), out.begin(), out.end());
  std::vector<float> full;
  model.forward(one_document(seq), &full);
  for (size_t j = 0; j < out.size(); ++j) {
    const float* row = full.data() + (prompt.size() - 1 + j) * size_t(c.vocab);
    EXPECT_EQ(out[j], int32_t(std::max_element(row, row + c.vocab) - row)) << "token " << j;
  }
  // Stopping: with the first greedy token as a stop id nothing is returned; with the third,
  // the first two are.
  o.stop_ids = {out[0]};
  EXPECT_TRUE(gen.generate(prompt, o).empty());
  if (out[2] != out[0] && out[2] != out[1]) {
    o.stop_ids = {out[2]};
    EXPECT_EQ(gen.generate(prompt, o), std::vector<int32_t>(out.begin(), out.begin() + 2));
  }
}

TEST(Generator, SamplingIsReproducibleForASeed) {
  ModelConfig c = small_config();
  Transformer model(c, 11, false);
  std::vector<int32_t> prompt = {1, 2, 3};
  Generator gen(model);
  SamplingOptions o;
  o.temperature = 1.5;
  o.top_p = 0.9;
  o.max_tokens = 20;
  o.seed = 4;
  std::vector<int32_t> a = gen.generate(prompt, o), b = gen.generate(prompt, o);
  EXPECT_EQ(a, b);
  o.seed = 5;
  EXPECT_NE(gen.generate(prompt, o), a);  // 20 draws at temperature 1.5 over 96 tokens
  // A tokenizer smaller than the model's vocabulary: ids at or past it are never drawn.
  o.vocab_limit = 10;
  for (int32_t id : gen.generate(prompt, o)) EXPECT_LT(id, 10);
  EXPECT_THROW(gen.step(c.vocab), InputError);
}

}  // namespace
}  // namespace trex::model
