// Seeded random token ids for the decoder and serving tests (tests/model, tests/serve): the same
// ids for the same seed, so a test's prompts are fixed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace trex::model::test_util {

// n ids in [0, vocab) drawn by mt19937_64(seed).
inline std::vector<int32_t> random_ids(int64_t n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = int32_t(rng() % uint64_t(vocab));
  return ids;
}

}  // namespace trex::model::test_util
