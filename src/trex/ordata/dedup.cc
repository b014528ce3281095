#include "trex/ordata/dedup.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "trex/lp/structure.h"
#include "trex/ordata/rng.h"
#include "trex/ordata/sample.h"
#include "xxhash.h"

namespace trex::ordata {

std::string normalize_for_hash(const std::string& text) {
  std::string out;
  bool space = false;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += char(std::tolower(c));
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

std::string Deduplicator::admit(const std::string& id, const Fingerprint& fp, std::string* of) {
  const uint64_t th = fp.text;
  if (auto it = exact_.find(th); it != exact_.end()) {
    if (of) *of = ids_[it->second];
    return reason::kDuplicateExact;
  }
  const MinHash& sig = fp.signature;
  std::array<uint64_t, kLshBands> keys;
  constexpr int rows_per_band = kMinHashSize / kLshBands;
  for (int b = 0; b < kLshBands; ++b) {
    keys[size_t(b)] = XXH3_64bits(sig.data() + b * rows_per_band, sizeof(uint64_t) * rows_per_band);
    auto it = bands_[size_t(b)].find(keys[size_t(b)]);
    if (it == bands_[size_t(b)].end()) continue;
    for (size_t other : it->second)
      if (minhash_similarity(sig, signatures_[other]) >= near_threshold_) {
        if (of) *of = ids_[other];
        return reason::kDuplicateNear;
      }
  }
  const uint64_t sh = fp.structure;
  if (auto it = structural_.find(sh); it != structural_.end()) {
    if (of) *of = ids_[it->second];
    return reason::kDuplicateStructural;
  }
  size_t k = ids_.size();
  ids_.push_back(id);
  signatures_.push_back(sig);
  exact_.emplace(th, k);
  structural_.emplace(sh, k);
  for (int b = 0; b < kLshBands; ++b) bands_[size_t(b)][keys[size_t(b)]].push_back(k);
  return "";
}

}  // namespace trex::ordata
