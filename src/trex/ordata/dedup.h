// Deduplication: exact (normalized text), near-duplicate text (MinHash with LSH) and
// structural (a canonical hash of the model, invariant to names and to the order of
// variables and rows).
//
// Samples are offered in index order by one thread, so which of two duplicates survives
// (the earlier) does not depend on threads or timing. Corpora given with --against are
// added first; a sample that duplicates one of them is dropped the same way.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <memory>
#include <vector>

#include "trex/lp/model.h"

namespace trex::ordata {

inline constexpr int kMinHashSize = 128;
inline constexpr int kLshBands = 32;  // 32 bands of 4 rows: candidates from a Jaccard of about 0.4 up

using MinHash = std::array<uint64_t, kMinHashSize>;

// Lower-cased words joined by single spaces (the text the exact hash is taken of).
std::string normalize_for_hash(const std::string& text);
uint64_t text_hash(const std::string& text);
// MinHash signature over word 5-shingles of the normalized text.
MinHash minhash(const std::string& text);
double minhash_similarity(const MinHash& a, const MinHash& b);
// The structural hash of the lp layer (lp/structure.h): Weisfeiler-Lehman colours of the
// variable-constraint graph with coefficients, single-variable rows as bounds. Equal for
// models equal up to renaming and reordering.
uint64_t structure_fingerprint(const lp::Model& model);

// What dedup compares, computed where the sample is built (in parallel); only the lookups
// run in index order.
struct Fingerprint {
  uint64_t text = 0;       // text_hash of the statement
  MinHash signature{};     // minhash of the statement
  uint64_t structure = 0;  // structure_fingerprint of the model
};
Fingerprint fingerprint(const std::string& statement, const lp::Model& model);

// The indexes live in scratch files (spill_table.h) read and written through one bounded page
// cache (page_cache.h), so the deduplicator's resident memory is at most its budget whatever
// the corpus size: files that fit the budget stay whole in the cache, larger ones are read
// back a page at a time. Per sample the files keep a 256-byte signature (the low 16 bits of
// each MinHash value; two values agree by chance with probability 2^-16), a 32-byte sketch of
// it (dedup.cc), a 64-byte id, two 16-byte table entries (exact, structural) and 32 8-byte
// ones (one per LSH band).
class Deduplicator {
 public:
  // 704 MB: at a million samples the files read on every admit (LSH bands 537 MB, sketches
  // 32 MB, exact and structural 67 MB) fit, with the rest of the process (its heap is larger
  // under tcmalloc) under 1 GB. Measured at 1M: the dedup stage took 204.6 thread-seconds
  // against 201.8 with 768 MB, and the peak RSS was 904 MiB against 1,003.
  static constexpr uint64_t kDefaultResidentBudget = uint64_t(704) << 20;
  // Index files are created (and at once unlinked) in scratch_dir, or in the system's
  // temporary directory when it is "". Throws InputError when they cannot be created.
  explicit Deduplicator(double near_threshold, const std::string& scratch_dir = "",
                        uint64_t resident_budget = kDefaultResidentBudget);
  ~Deduplicator();

  // "" when the sample is new (it is then recorded), else the duplicate reason from sample.h
  // and, in *of, the id of the sample it duplicates.
  std::string admit(const std::string& id, const Fingerprint& fp, std::string* of);
  std::string admit(const std::string& id, const std::string& statement, const lp::Model& model, std::string* of) {
    return admit(id, fingerprint(statement, model), of);
  }
  size_t size() const;
  uint64_t file_bytes() const;      // the index files' size
  uint64_t resident_bytes() const;  // the cache's pages in use: at most capacity_bytes()
  uint64_t capacity_bytes() const;  // the budget (at least PageCache::kMinBytes)
  uint64_t cache_misses() const;         // page reads from the index files so far
  uint64_t band_candidates() const;      // earlier samples met in a shared LSH band (once per band)
  uint64_t distinct_candidates() const;  // the same, each record once per admit (what the sketch is applied to)
  uint64_t signatures_compared() const;  // signatures read: records the sketch did not rule out, each once per admit

 private:
  struct Indexes;
  double near_threshold_;
  std::unique_ptr<Indexes> ix_;
};

}  // namespace trex::ordata
