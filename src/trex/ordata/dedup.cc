#include "trex/ordata/dedup.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "trex/lp/structure.h"
#include "trex/ordata/rng.h"
#include "trex/ordata/sample.h"
#include "trex/ordata/spill_table.h"
#include "xxhash.h"

namespace trex::ordata {

// The C locale's isspace and tolower written out (trex never sets a locale): the library calls,
// one per character of every statement, were 2% of a corpus run's CPU (perf, 20,000 samples).
std::string normalize_for_hash(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == ' ' || (c >= '\t' && c <= '\r')) {  // \t \n \v \f \r
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

uint64_t text_hash(const std::string& text) {
  std::string n = normalize_for_hash(text);
  return XXH3_64bits(n.data(), n.size());
}

MinHash minhash(const std::string& text) {
  std::string n = normalize_for_hash(text);
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < n.size()) {
    size_t j = n.find(' ', i);
    if (j == std::string::npos) j = n.size();
    words.emplace_back(n.data() + i, j - i);
    i = j + 1;
  }
  constexpr size_t kShingle = 5;
  MinHash sig;
  sig.fill(UINT64_MAX);
  size_t count = words.size() < kShingle ? 1 : words.size() - kShingle + 1;
  for (size_t s = 0; s < count; ++s) {
    size_t len = 0;
    const char* start = words.empty() ? n.data() : words[s].data();
    size_t last = std::min(words.size(), s + kShingle);
    if (!words.empty()) len = size_t(words[last - 1].data() + words[last - 1].size() - start);
    XXH128_hash_t h = XXH3_128bits(start, len);
    // 128 hash functions from two, h_k = h1 + k * h2 (Kirsch and Mitzenmacher's double
    // hashing; h2 odd so that the k values differ): a loop the compiler vectorizes.
    const uint64_t h1 = h.low64, h2 = h.high64 | 1;
    for (int k = 0; k < kMinHashSize; ++k) {
      uint64_t v = h1 + uint64_t(k) * h2;
      sig[size_t(k)] = v < sig[size_t(k)] ? v : sig[size_t(k)];
    }
  }
  return sig;
}

double minhash_similarity(const MinHash& a, const MinHash& b) {
  int same = 0;
  for (int k = 0; k < kMinHashSize; ++k) same += a[size_t(k)] == b[size_t(k)];
  return double(same) / kMinHashSize;
}

uint64_t structure_fingerprint(const lp::Model& m) { return lp::structure_hash(m); }

Fingerprint fingerprint(const std::string& statement, const lp::Model& model) {
  Fingerprint f;
  f.text = text_hash(statement);
  f.signature = minhash(statement);
  f.structure = structure_fingerprint(model);
  return f;
}

namespace {

constexpr size_t kIdBytes = 64;
using Short = std::array<uint16_t, kMinHashSize>;  // 256 bytes: 16 records to a page
using IdRecord = std::array<char, kIdBytes>;

// Two bits of each of the 128 short values (of a multiplicative hash, so that different
// values differ in their two bits with probability ~3/4): 32 bytes. Where two sketches differ
// the values differ, so the count of differing positions is a lower bound on the values that
// differ, and a candidate whose bound already exceeds 128 - needed cannot reach the threshold:
// it is rejected without reading its 256-byte signature. Exact (no near duplicate is missed).
// Why: templated statements share whole LSH bands (the boilerplate's minimum shingles), so a
// band's chain grows with the corpus; at 200k samples each admit compared ~150 signatures.
using Sketch = std::array<uint64_t, 4>;

Sketch sketch_of(const Short& sig) {
  Sketch s{};
  for (int k = 0; k < kMinHashSize; ++k) {
    const uint64_t two = uint64_t(uint16_t(sig[size_t(k)] * 0x9e37u) >> 14);  // the top 2 bits
    s[size_t(k / 32)] |= two << (2 * (k % 32));
  }
  return s;
}

int differing_positions(const Sketch& a, const Sketch& b) {
  int n = 0;
  for (size_t w = 0; w < a.size(); ++w) {
    const uint64_t d = a[w] ^ b[w];
    n += __builtin_popcountll((d | (d >> 1)) & 0x5555555555555555ULL);
  }
  return n;
}

// The record numbers already checked during one admit. A templated sample shares several LSH
// bands with the same earlier samples (the boilerplate's minimum shingles), so it meets each
// of them once per shared band; the verdict on a pair does not depend on the band, so a
// record checked (and ruled out) once is passed over after that: the same first hit, the
// same corpus, one sketch read per record instead of one per shared band. Open addressing;
// clear() is a new stamp, not a pass over the table.
class CheckedSet {
 public:
  void clear() {
    if (++stamp_ == 0) {  // after 2^32 admits: old stamps would look current
      std::fill(slots_.begin(), slots_.end(), 0);
      stamp_ = 1;
    }
    count_ = 0;
  }
  // Whether `record` was not in the set (it is now).
  bool insert(uint32_t record) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t entry = (uint64_t(stamp_) << 32) | record;
    for (size_t i = home(record);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == entry) return false;
      if ((slots_[i] >> 32) != stamp_) {
        slots_[i] = entry;
        ++count_;
        return true;
      }
    }
  }

 private:
  size_t home(uint32_t record) const { return size_t((uint64_t(record) * 0x9e3779b97f4a7c15ULL) >> shift_); }
  void grow() {
    std::vector<uint64_t> old(slots_.size() * 2, 0);
    old.swap(slots_);
    shift_ -= 1;
    count_ = 0;
    for (uint64_t e : old)
      if ((e >> 32) == stamp_) insert(uint32_t(e));
  }
  std::vector<uint64_t> slots_ = std::vector<uint64_t>(size_t(1) << 12, 0);
  int shift_ = 64 - 12;
  uint32_t stamp_ = 1;
  size_t count_ = 0;
};

std::string scratch_name(const std::string& dir, const char* what) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path base = dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(dir);
  return (base / (".dedup-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + what)).string();
}

}  // namespace

struct Deduplicator::Indexes {
  Indexes(const std::string& dir, uint64_t budget)
      : cache(budget),
        signatures(cache, scratch_name(dir, "signatures"), sizeof(Short)),
        sketches(cache, scratch_name(dir, "sketches"), sizeof(Sketch)),
        ids(cache, scratch_name(dir, "ids"), sizeof(IdRecord)),
        exact(cache, scratch_name(dir, "exact"), 1 << 14),
        structural(cache, scratch_name(dir, "structural"), 1 << 14),
        bands(cache, scratch_name(dir, "bands"), 1 << 19) {}
  PageCache cache;  // first: the files below give their pages back to it when they go
  uint64_t compared = 0, candidates = 0, distinct = 0;
  CheckedSet checked;  // this admit's band candidates
  SpillRecords signatures, sketches, ids;  // by record number; ids are read only to name a duplicate's original
  SpillTable exact, structural;             // values: record numbers
  CompactSpillTable bands;
};

Deduplicator::Deduplicator(double near_threshold, const std::string& scratch_dir, uint64_t resident_budget)
    : near_threshold_(near_threshold), ix_(std::make_unique<Indexes>(scratch_dir, resident_budget)) {}

Deduplicator::~Deduplicator() = default;

size_t Deduplicator::size() const { return ix_->signatures.size(); }

uint64_t Deduplicator::file_bytes() const {
  return ix_->signatures.bytes() + ix_->sketches.bytes() + ix_->ids.bytes() + ix_->exact.bytes() + ix_->structural.bytes() + ix_->bands.bytes();
}

uint64_t Deduplicator::cache_misses() const { return ix_->cache.misses(); }
uint64_t Deduplicator::band_candidates() const { return ix_->candidates; }
uint64_t Deduplicator::distinct_candidates() const { return ix_->distinct; }
uint64_t Deduplicator::signatures_compared() const { return ix_->compared; }

uint64_t Deduplicator::resident_bytes() const { return ix_->cache.resident_bytes(); }

uint64_t Deduplicator::capacity_bytes() const { return ix_->cache.capacity_bytes(); }

std::string Deduplicator::admit(const std::string& id, const Fingerprint& fp, std::string* of) {
  Indexes& ix = *ix_;
  auto id_of = [&](uint32_t k) {
    IdRecord r;
    ix.ids.read(k, r.data());
    return std::string(r.data(), strnlen(r.data(), kIdBytes));
  };
  uint32_t hit = 0;
  auto first = [&](uint32_t k) { return hit = k, true; };
  if (ix.exact.find(fp.text, first)) {
    if (of) *of = id_of(hit);
    return reason::kDuplicateExact;
  }
  Short sig;
  for (int k = 0; k < kMinHashSize; ++k) sig[size_t(k)] = uint16_t(fp.signature[size_t(k)]);
  const Sketch sk = sketch_of(sig);
  IdRecord rec_id{};
  std::memcpy(rec_id.data(), id.data(), std::min(id.size(), kIdBytes));
  std::array<uint64_t, kLshBands> keys;
  constexpr int rows_per_band = kMinHashSize / kLshBands;
  const int needed = int(std::ceil(near_threshold_ * kMinHashSize - 1e-9));
  const int may_differ = kMinHashSize - needed;
  ix.checked.clear();
  for (int b = 0; b < kLshBands; ++b) {
    keys[size_t(b)] = XXH3_64bits_withSeed(fp.signature.data() + b * rows_per_band, sizeof(uint64_t) * rows_per_band, uint64_t(b));
    bool near = ix.bands.find(keys[size_t(b)], [&](uint32_t other) {
      ++ix.candidates;
      if (!ix.checked.insert(other)) return false;  // ruled out in an earlier band
      ++ix.distinct;
      Sketch their_sketch;
      ix.sketches.read(other, their_sketch.data());
      if (differing_positions(sk, their_sketch) > may_differ) return false;
      ++ix.compared;
      Short theirs;
      ix.signatures.read(other, theirs.data());
      int same = 0;
      for (int k = 0; k < kMinHashSize; ++k) same += theirs[size_t(k)] == sig[size_t(k)];
      return same >= needed ? (hit = other, true) : false;
    });
    if (near) {
      if (of) *of = id_of(hit);
      return reason::kDuplicateNear;
    }
  }
  if (ix.structural.find(fp.structure, first)) {
    if (of) *of = id_of(hit);
    return reason::kDuplicateStructural;
  }
  const uint32_t k = ix.signatures.append(sig.data());
  ix.sketches.append(sk.data());
  ix.ids.append(rec_id.data());
  ix.exact.insert(fp.text, k);
  ix.structural.insert(fp.structure, k);
  for (int b = 0; b < kLshBands; ++b) ix.bands.insert(keys[size_t(b)], k);
  return "";
}

}  // namespace trex::ordata
