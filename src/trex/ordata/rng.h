// A small deterministic random number generator for the corpus generators.
//
// std::uniform_*_distribution is implementation-defined, so a corpus built with another C++
// library would differ; this one (SplitMix64 seeding xoshiro256**) gives the same stream
// everywhere. Each sample gets its own stream from (run seed, sample index, purpose), so a
// sample does not depend on which thread, shard or process made it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace trex::ordata {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mixes values into one 64-bit stream key.
inline uint64_t mix_key(uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t s = a;
  uint64_t h = splitmix64(s);
  s ^= b + 0x632be59bd9b4e019ULL + h;
  h ^= splitmix64(s);
  s ^= c + 0x7fb5d329728ea185ULL + h;
  return splitmix64(s);
}

inline uint64_t string_key(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a, fixed across platforms
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& w : s_) w = splitmix64(s);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (inclusive). REQUIRES: lo <= hi.
  long integer(long lo, long hi) {
    uint64_t span = uint64_t(hi - lo) + 1;
    return lo + long(next() % span);  // modulo bias is below 2^-40 for these spans
  }
  // Uniform real in [lo, hi] rounded to `decimals` places (so it prints as written).
  double real(double lo, double hi, int decimals) {
    double scale = std::pow(10.0, decimals);
    double v = lo + (hi - lo) * uniform();
    return std::round(v * scale) / scale;
  }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[size_t(integer(0, long(v.size()) - 1))]; }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(integer(0, long(i) - 1))]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace trex::ordata
