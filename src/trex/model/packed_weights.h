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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "trex/model/matvec.h"
#include "trex/model/packed_matvec.h"

namespace trex::model {

// Lookups take no lock: a step's lanes call get() for every product (hundreds a step at v4-nano,
// a lane's every expert slice), and with a shared_mutex each call made two atomic
// read-modify-writes on one line that both cores wrote, plus an unordered_map's modulo and node
// walk (PackedWeights::get was 3-4% of a one-thread 8-row step's CPU, session 26). Here the
// copies live in an open-addressing table of atomic pointers: a reader probes it with acquire
// loads and writes nothing; a copy once published never moves. Inserting (once per matrix, at
// its first use) takes a mutex; a table past half full is replaced by one twice its size, and
// the old table stays allocated until clear() (a reader may still be probing it; what it finds
// there is valid, and what it misses it looks up again under the mutex).
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // The packed copy of w [out, in], packed now if it is not yet.
  const PackedMatrix& get(const float* w, int64_t out, int64_t in) { return find_or_pack({w, out, in, nullptr}); }
  // The packed copy of [top; bottom], top and bottom both [out, in] (PackedMatrix's stacked
  // constructor): a matrix of 2 out outputs, the top's first.
  const PackedMatrix& get_stacked(const float* top, const float* bottom, int64_t out, int64_t in) {
    return find_or_pack({top, 2 * out, in, bottom});
  }

  // Drops every copy. Not while another thread may call get() (the decoder clears it at the
  // start of a step, when the model's parameter array has moved).
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    table_.store(nullptr, std::memory_order_release);
    tables_.clear();
    entries_.clear();
  }

  // Bytes of packed weights held.
  size_t bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& e : entries_) n += e->m.bytes();
    return n;
  }

 private:
  struct Key {
    const float* w;
    int64_t out, in;
    const float* bottom;  // a stacked matrix's second half ([w; bottom], out / 2 rows each), else null
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    PackedMatrix m;
  };
  // Open addressing with linear probing over 2^bits slots; a slot, once set, keeps its entry.
  struct Table {
    explicit Table(int b) : bits(b), slots(size_t(1) << b) {}
    size_t home(const Key& k) const {
      // Fibonacci hashing of the address and shape (slices of one matrix differ in address).
      const uint64_t h = (uint64_t(reinterpret_cast<uintptr_t>(k.w)) ^ (uint64_t(k.out) << 40) ^
                          (uint64_t(k.in) << 20) ^ (uint64_t(reinterpret_cast<uintptr_t>(k.bottom)) << 7)) *
                         0x9e3779b97f4a7c15ull;
      return size_t(h >> (64 - bits));
    }
    const Entry* find(const Key& k) const {
      const size_t mask = slots.size() - 1;
      for (size_t i = home(k);; i = (i + 1) & mask) {
        const Entry* e = slots[i].load(std::memory_order_acquire);
        if (!e || e->key == k) return e;
      }
    }
    // Under the owner's mutex, with a free slot left (the table is kept at most half full).
    void put(const Entry* e) {
      const size_t mask = slots.size() - 1;
      size_t i = home(e->key);
      while (slots[i].load(std::memory_order_relaxed)) i = (i + 1) & mask;
      slots[i].store(e, std::memory_order_release);
    }
    int bits;
    std::vector<std::atomic<const Entry*>> slots;
  };

  const PackedMatrix& find_or_pack(const Key& k) {
    if (const Table* t = table_.load(std::memory_order_acquire))
      if (const Entry* e = t->find(k)) return e->m;
    return insert(k);
  }

  const PackedMatrix& insert(const Key& k) {
    // Packed outside the lock: the other lanes keep packing and reading meanwhile.
    auto e = std::make_unique<Entry>(Entry{
        k, k.bottom ? PackedMatrix(k.w, k.out / 2, k.bottom, k.out / 2, k.in) : PackedMatrix(k.w, k.out, k.in)});
    std::lock_guard<std::mutex> lock(mu_);
    Table* t = tables_.empty() ? nullptr : tables_.back().get();
    // A copy packed meanwhile by another lane stays (others may hold references to it).
    if (t)
      if (const Entry* had = t->find(k)) return had->m;
    if (!t || 2 * (entries_.size() + 1) > t->slots.size()) {
      tables_.push_back(std::make_unique<Table>(t ? t->bits + 1 : 8));
      t = tables_.back().get();
      for (const auto& old : entries_) t->put(old.get());
    }
    entries_.push_back(std::move(e));
    t->put(entries_.back().get());
    table_.store(t, std::memory_order_release);
    return entries_.back()->m;
  }

  mutable std::mutex mu_;                      // inserting, clear(), bytes()
  std::vector<std::unique_ptr<Entry>> entries_;  // every copy, in order of packing
  std::vector<std::unique_ptr<Table>> tables_;   // the current one last; older ones kept for readers
  std::atomic<Table*> table_{nullptr};           // tables_.back(), for lock-free readers
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
