// AttentionLayer::decode_rows: several rows decoded in one call, each against its own cache at
// its own position, give every row bit for bit what decode gives it alone, and leave each cache
// as decoding alone leaves it: for ratios 0, 4 and 128, with the rows' positions apart, so in
// one call one row closes a compressor block while the others do not, one row is still inside
// the window while another is past it, and the indexer chooses among more entries than top_k
// for one row and fewer for another. The same with the projections on a decoder's packed
// weights (PackedWeights), against one-row calls with the same packed weights.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/attention.h"
#include "trex/model/block_tensors.h"
#include "trex/model/packed_weights.h"
#include "trex/model/transformer.h"

namespace trex::model {
namespace {

std::vector<float> random_rows(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

void expect_same_cache(const AttentionCache& a, const AttentionCache& b, int layer, int row) {
  EXPECT_EQ(a.len, b.len) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.window, b.window) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.kt, b.kt) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.zt, b.zt) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.comp, b.comp) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.idx_kt, b.idx_kt) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.idx_zt, b.idx_zt) << "layer " << layer << " row " << row;
  EXPECT_EQ(a.idx_comp, b.idx_comp) << "layer " << layer << " row " << row;
}

TEST(AttentionDecodeRows, RowsTogetherEqualEachRowAloneBitForBit) {
  const ModelConfig c = test_util::tiny_v4_config("0, 4, 128");
  const Transformer model(c, 7, false);
  const int64_t d = c.hidden;
  // Rows start at positions 0, 9 and 131 (past the window, several ratio-4 entries, one
  // ratio-128 entry), then take 40 steps together.
  const std::vector<int64_t> start = {0, 9, 131};
  const int64_t B = int64_t(start.size()), steps = 40;
  for (bool use_packed : {false, true})
  for (int l = 0; l < c.layers; ++l) {
    PackedWeights pk;
    PackedWeights* packed = use_packed ? &pk : nullptr;
    const AttentionParams p =
        attention_tensors(model.layout(), model.params(), "layers." + std::to_string(l) + ".");
    AttentionLayer together(c, l), alone(c, l);
    std::vector<AttentionCache> batch(static_cast<size_t>(B)), single(static_cast<size_t>(B));
    std::vector<float> out(static_cast<size_t>(d)), outs(static_cast<size_t>(B * d));
    auto alone_decode = [&](const float* x, AttentionCache& cache) {
      AttentionCache* one = &cache;
      alone.decode_rows(p, x, 1, &one, out.data(), packed);
    };
    // Bring each row's caches to its start position, token by token.
    for (int64_t b = 0; b < B; ++b) {
      const std::vector<float> x = random_rows(start[size_t(b)] * d, 100 + uint64_t(b));
      for (int64_t t = 0; t < start[size_t(b)]; ++t) {
        alone_decode(x.data() + t * d, batch[size_t(b)]);
        alone_decode(x.data() + t * d, single[size_t(b)]);
      }
    }
    std::vector<AttentionCache*> ptrs;
    for (AttentionCache& a : batch) ptrs.push_back(&a);
    for (int64_t s = 0; s < steps; ++s) {
      const std::vector<float> x = random_rows(B * d, 1000 + uint64_t(s) + 97 * uint64_t(l));
      together.decode_rows(p, x.data(), B, ptrs.data(), outs.data(), packed);
      for (int64_t b = 0; b < B; ++b) {
        alone_decode(x.data() + b * d, single[size_t(b)]);
        for (int64_t e = 0; e < d; ++e)
          ASSERT_EQ(outs[size_t(b * d + e)], out[size_t(e)])
              << "packed " << use_packed << " layer " << l << " step " << s << " row " << b << " element " << e;
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      EXPECT_EQ(batch[size_t(b)].len, start[size_t(b)] + steps);
      expect_same_cache(batch[size_t(b)], single[size_t(b)], l, int(b));
    }
  }
}

}  // namespace
}  // namespace trex::model
