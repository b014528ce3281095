#include "trex/train/mixture.h"

#include <limits>

#include "trex/util/error.h"

namespace trex::train {

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return double(next() >> 11) * 0x1.0p-53; }

nlohmann::json MixturePosition::to_json() const {
  nlohmann::json c = nlohmann::json::array();
  for (const SourceCursor& s : cursors) c.push_back({{"epoch", s.epoch}, {"index", s.index}});
  // The RNG state as a decimal string: JSON readers elsewhere may not keep 64-bit integers.
  return {{"rng", std::to_string(rng)}, {"cursors", c}};
}

MixturePosition MixturePosition::from_json(const nlohmann::json& j, size_t sources, const std::string& field) {
  MixturePosition p;
  try {
    p.rng = std::stoull(j.at("rng").get<std::string>());
    const nlohmann::json& c = j.at("cursors");
    if (!c.is_array() || c.size() != sources)
      throw InputError::field(field, "has " + std::to_string(c.is_array() ? c.size() : 0) + " source cursors, the config has " +
                                         std::to_string(sources) + " sources");
    for (const nlohmann::json& s : c) p.cursors.push_back({s.at("epoch").get<uint64_t>(), s.at("index").get<uint64_t>()});
  } catch (const nlohmann::json::exception& e) {
    throw InputError::field(field, std::string("malformed data position: ") + e.what());
  } catch (const std::logic_error& e) {
    throw InputError::field(field, std::string("malformed data position: ") + e.what());
  }
  return p;
}

Mixture::Mixture(const std::vector<Source>* sources, uint64_t seed) : sources_(sources), seed_(seed) {
  double total = 0;
  for (const Source& s : *sources_) total += s.spec().weight;
  double acc = 0;
  for (const Source& s : *sources_) {
    acc += s.spec().weight;
    cumulative_.push_back(acc / total);
  }
  cumulative_.back() = 1.0;
  pos_.rng = seed ^ 0x6d69787475726521ull;  // "mixture!": a stream apart from the shuffles
  pos_.cursors.assign(sources_->size(), SourceCursor{});
  perm_.resize(sources_->size());
  perm_epoch_.assign(sources_->size(), std::numeric_limits<uint64_t>::max());
}

void Mixture::restore(const MixturePosition& pos) {
  if (pos.cursors.size() != sources_->size()) throw std::logic_error("Mixture::restore: wrong number of sources");
  pos_ = pos;
}

size_t Mixture::doc_at(size_t source, const SourceCursor& c) {
  size_t n = (*sources_)[source].size();
  if (perm_epoch_[source] != c.epoch) {
    std::vector<uint32_t>& p = perm_[source];
    p.resize(n);
    for (size_t i = 0; i < n; ++i) p[i] = uint32_t(i);
    SplitMix64 r{seed_ * 0x9e3779b97f4a7c15ull + (uint64_t(source) << 32) + c.epoch};
    for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[r.next() % i]);
    perm_epoch_[source] = c.epoch;
  }
  return perm_[source][c.index];
}

DocumentRef Mixture::next() {
  SplitMix64 r{pos_.rng};
  double u = r.uniform();
  pos_.rng = r.state;
  size_t s = 0;
  while (s + 1 < cumulative_.size() && u >= cumulative_[s]) ++s;
  SourceCursor& c = pos_.cursors[s];
  DocumentRef ref{s, doc_at(s, c)};
  if (++c.index >= (*sources_)[s].size()) {
    c.index = 0;
    ++c.epoch;
  }
  return ref;
}

}  // namespace trex::train
