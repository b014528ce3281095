// Which rank holds each parameter's summed gradient and optimizer state (ZeRO-1), for a layout.
//
// Dense parameters are data-parallel over every rank, so their state is split over every rank.
// A routed expert's parameters (each expert-tensor width shard of them) are computed by the
// ranks of one expert-data-parallel (EDP) group, those with the expert's EP index and the
// shard's ETP index; their gradient is reduced to and their state kept on ranks of that group
// only. So a rank's shard is a list of flat ranges: its share of the dense elements (split over
// all ranks in flat order) and its share of its own experts' elements (the elements its EDP group
// owns, split over the group in flat order). Everything that holds a shard (the reducer's sums,
// the optimizer, a checkpoint's rank file) keeps it packed: the ranges' elements one after the
// other, in flat order.
//
// With one rank, or without expert or expert-tensor parallelism (EDP group = every rank), the
// shard of rank q is one range: equal runs of whole norm chunks (kNormChunk), as ZeRO-1 always
// split them.
#pragma once

#include <cstdint>
#include <vector>

#include "trex/dist/layout.h"
#include "trex/model/transformer.h"

namespace trex::dist {

// Elements per chunk of the gradient norm (step_reducer.h).
inline constexpr int64_t kNormChunk = 4096;

// [begin, end) of the flat parameter vector.
struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// [begin, end) of rank q's single-range shard of n parameters over `ranks` ranks: equal runs of
// whole chunks (the last one shorter or empty).
ShardRange shard_of(int64_t n, int ranks, int q);

// A maximal run of the flat vector held by one rank, at `at` in that rank's packed shard.
struct OwnedRun {
  int64_t begin = 0, end = 0;
  int rank = 0;
  int64_t at = 0;
};

class ShardMap {
 public:
  // The layout's shards of `model`'s parameters over `world` ranks (layout.world() == world,
  // or world 1).
  ShardMap(const model::Transformer& model, const ParallelLayout& layout, int world);

  int ranks() const { return int(ranges_.size()); }
  int64_t params() const { return n_; }
  // Rank q's ranges, in flat order, adjacent ones merged.
  const std::vector<ShardRange>& ranges(int q) const { return ranges_[size_t(q)]; }
  // Elements in rank q's shard.
  int64_t size(int q) const { return sizes_[size_t(q)]; }
  // Every element's holder: runs in flat order, covering [0, params()) once.
  const std::vector<OwnedRun>& runs() const { return runs_; }
  // The run holding flat element i, and its index in runs().
  const OwnedRun& run_at(int64_t i) const { return runs_[run_index(i)]; }
  size_t run_index(int64_t i) const;
  // The elements of rank q's shard within flat [lo, hi), as a packed range of q's shard (its
  // elements are consecutive there: packed order is flat order).
  ShardRange packed_within(int q, int64_t lo, int64_t hi) const;

 private:
  int64_t n_ = 0;
  std::vector<std::vector<ShardRange>> ranges_;
  std::vector<int64_t> sizes_;
  std::vector<OwnedRun> runs_;
  std::vector<std::vector<int64_t>> starts_;  // [rank][range + 1]: packed offset of each range
  int64_t packed_below(int q, int64_t x) const;  // rank q's elements before flat x
};

}  // namespace trex::dist
