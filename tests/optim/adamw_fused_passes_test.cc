// AdamW's fused passes, each against the step and the pass it replaces, over several steps and
// groups of odd sizes, at 1 and 3 threads, into arrays that start as NaN (every element must be
// written): step_and_copy_master = step() then read_state(kMaster) over the whole range (with and
// without the bf16 weights); step_and_widen_weights = step() then widening its bf16 weights to
// fp32 (core::bf16_to_fp32, trex train's pass after each step). Byte-equal state, bf16 weights
// and outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"
#include "trex/optim/adamw.h"

namespace trex::optim {
namespace {

std::vector<float> normal(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Three groups: a vector tail in each, the middle one without decay, one past a pool chunk.
std::vector<ParamGroup> odd_groups() {
  return {{"blocks", 70001, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f}},
          {"norms", 17, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.f}},
          {"experts", 12007, {3e-3f, 0.8f, 0.95f, 1e-6f, 0.01f}}};
}

int64_t total_size(const std::vector<ParamGroup>& groups) {
  int64_t n = 0;
  for (const ParamGroup& g : groups) n += g.size;
  return n;
}

// The master weights and both moments of `got` byte-equal to `want`'s.
void expect_same_state(AdamW& want, AdamW& got, int64_t n, const std::string& tag) {
  for (StateArray a : {StateArray::kMaster, StateArray::kExpAvg, StateArray::kExpAvgSq}) {
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    want.read_state(a, 0, n, x.data());
    got.read_state(a, 0, n, y.data());
    ASSERT_TRUE(same_floats(x, y)) << tag << " array " << int(a);
  }
}

TEST(AdamWMasterCopy, EqualsStepThenReadingTheMaster) {
  const std::vector<ParamGroup> groups = odd_groups();
  const int64_t n = total_size(groups);
  const std::vector<float> init = normal(n, 3, 1.f);
  for (int threads : {1, 3}) {
    core::ThreadPool pool(threads);
    for (bool with_bf16 : {true, false}) {
      AdamW want(groups, init.data(), &pool), got(groups, init.data(), &pool);
      for (int t = 0; t < 3; ++t) {
        std::vector<float> g = normal(n, 10 + uint32_t(t), t == 1 ? 10.f : 0.01f);
        std::vector<core::bf16> w1(static_cast<size_t>(n));
        std::vector<core::bf16> w2(static_cast<size_t>(n), core::bf16{0x7fc1});
        // The copy starts as NaN everywhere: every element must be written.
        std::vector<float> master(static_cast<size_t>(n));
        std::vector<float> copy(static_cast<size_t>(n), std::nanf(""));
        want.step(g.data(), with_bf16 ? w1.data() : nullptr);
        want.read_state(StateArray::kMaster, 0, n, master.data());
        got.step_and_copy_master(g.data(), with_bf16 ? w2.data() : nullptr, copy.data());
        const std::string tag = std::to_string(threads) + " threads, bf16 " +
                                std::to_string(with_bf16) + ", step " + std::to_string(t);
        ASSERT_TRUE(same_floats(copy, master)) << tag;
        if (with_bf16) {
          ASSERT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 2), 0) << tag;
        }
        ASSERT_NO_FATAL_FAILURE(expect_same_state(want, got, n, tag));
      }
      EXPECT_EQ(got.step_count(), 3);
    }
  }
}

TEST(AdamWWidenWeights, EqualsStepThenWideningTheBf16Weights) {
  const std::vector<ParamGroup> groups = odd_groups();
  const int64_t n = total_size(groups);
  const std::vector<float> init = normal(n, 5, 1.f);
  for (int threads : {1, 3}) {
    core::ThreadPool pool(threads);
    AdamW want(groups, init.data(), &pool), got(groups, init.data(), &pool);
    for (int t = 0; t < 3; ++t) {
      std::vector<float> g = normal(n, 20 + uint32_t(t), t == 1 ? 10.f : 0.01f);
      std::vector<core::bf16> w1(static_cast<size_t>(n));
      std::vector<core::bf16> w2(static_cast<size_t>(n), core::bf16{0x7fc1});
      std::vector<float> widened_after(static_cast<size_t>(n));
      std::vector<float> widened(static_cast<size_t>(n), std::nanf(""));
      want.step(g.data(), w1.data());
      core::bf16_to_fp32(w1.data(), widened_after.data(), size_t(n));
      got.step_and_widen_weights(g.data(), w2.data(), widened.data());
      const std::string tag = std::to_string(threads) + " threads, step " + std::to_string(t);
      ASSERT_TRUE(same_floats(widened, widened_after)) << tag;
      ASSERT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 2), 0) << tag;
      ASSERT_NO_FATAL_FAILURE(expect_same_state(want, got, n, tag));
    }
    EXPECT_EQ(got.step_count(), 3);
  }
}

}  // namespace
}  // namespace trex::optim
