// A weighted mixture of sources: which document comes next, reproducibly and resumably.
//
// Each draw picks a source with probability weight / sum(weights) from a seeded SplitMix64
// stream, then takes that source's next document in its current epoch's order. Every source
// walks its documents in a permutation fixed by (seed, source index, epoch) (Fisher-Yates on
// its own SplitMix64 stream), reshuffled each time it wraps around, so a small source repeats in
// a new order rather than starving the mixture.
//
// The whole position is MixturePosition: the mixture RNG state and each source's (epoch,
// index). Restoring it makes the following draws identical to an uninterrupted run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "trex/train/dataset.h"

namespace trex::train {

// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit word of state, so it serializes exactly.
struct SplitMix64 {
  uint64_t state = 0;
  uint64_t next();
  double uniform();  // [0, 1), 53 random bits
};

struct SourceCursor {
  uint64_t epoch = 0;
  uint64_t index = 0;  // position within the epoch's permutation
};

struct MixturePosition {
  uint64_t rng = 0;
  std::vector<SourceCursor> cursors;  // one per source, in config order
  nlohmann::json to_json() const;
  // Throws InputError (field `field`) when j is not a position of `sources` sources.
  static MixturePosition from_json(const nlohmann::json& j, size_t sources, const std::string& field);
};

struct DocumentRef {
  size_t source = 0;
  size_t doc = 0;  // index into the source
};

class Mixture {
 public:
  // REQUIRES: sources non-empty, every weight > 0 and finite (the config reader checks).
  Mixture(const std::vector<Source>* sources, uint64_t seed);

  DocumentRef next();
  const MixturePosition& position() const { return pos_; }
  void restore(const MixturePosition& pos);

 private:
  size_t doc_at(size_t source, const SourceCursor& c);

  const std::vector<Source>* sources_;
  uint64_t seed_;
  std::vector<double> cumulative_;  // normalized, last == 1
  MixturePosition pos_;
  // The permutation of each source's current epoch (rebuilt when the epoch changes).
  std::vector<std::vector<uint32_t>> perm_;
  std::vector<uint64_t> perm_epoch_;
};

}  // namespace trex::train
