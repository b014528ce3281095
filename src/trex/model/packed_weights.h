// The decode weights of a model in packed_matvec.h's panel layout, packed on first use and kept
// by whoever decodes (BatchDecoder, so Generator and trex serve too): each weight matrix is
// packed once, then every step's products read the packed copy.
//
// Keyed by the weight's address and shape (a slice of a matrix is a matrix of its own): the
// decoder clears it when the model's parameter array moves, and the model's weights must not
// change in place while it is in use (decoding does not train). Packing on first use (not all at load) leaves the layers' own code to say
// which products a step runs; a 30 MB model packs in tens of milliseconds, spread over the first
// steps that touch each expert. Safe to use from several threads at once (the lanes of a step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "trex/model/matvec.h"
#include "trex/model/packed_matvec.h"

namespace trex::model {

class PackedWeights {
 public:
  // The packed copy of w [out, in], packed now if it is not yet.
  const PackedMatrix& get(const float* w, int64_t out, int64_t in) {
    const Key k{w, out, in};
    {
      std::shared_lock lock(mu_);
      auto it = map_.find(k);
      if (it != map_.end()) return it->second;
    }
    PackedMatrix m(w, out, in);  // outside the lock: the other lanes keep reading
    std::unique_lock lock(mu_);
    // A copy packed meanwhile by another lane stays (others may hold references to it).
    return map_.try_emplace(k, std::move(m)).first->second;
  }

  void clear() {
    std::unique_lock lock(mu_);
    map_.clear();
  }

  // Bytes of packed weights held.
  size_t bytes() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto& [w, m] : map_) n += m.bytes();
    return n;
  }

 private:
  struct Key {
    const float* w;
    int64_t out, in;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const float*>()(k.w) ^ (size_t(k.out) * 0x9e3779b97f4a7c15ull) ^ size_t(k.in);
    }
  };
  mutable std::shared_mutex mu_;
  std::unordered_map<Key, PackedMatrix, Hash> map_;  // node-based: references stay valid
};

// y [n, out] = x [n, in] W^T through `packed`'s copy of w, or matvec.h's row-by-row product of w
// itself when packed is null (the training model's own callers). A decoder passes the same
// `packed` for one row as for many, so a row's bits do not depend on its batch.
inline void matvec_rows(PackedWeights* packed, const float* w, const float* x, int64_t n,
                        int64_t out, int64_t in, float* y) {
  if (packed)
    matvec_rows(packed->get(w, out, in), x, n, y);
  else
    matvec_rows(w, x, n, out, in, y);
}

}  // namespace trex::model
