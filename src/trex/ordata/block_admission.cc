#include "trex/ordata/block_admission.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "trex/util/error.h"

namespace trex::ordata {

namespace {

// Duplicate reasons on the wire: their index here (0: new).
const char* const kDuplicateReasons[] = {"", reason::kDuplicateExact, reason::kDuplicateNear,
                                         reason::kDuplicateStructural};

uint8_t reason_code(const std::string& r) {
  for (uint8_t c = 0; c < 4; ++c)
    if (r == kDuplicateReasons[c]) return c;
  throw std::logic_error("admit_block: unknown duplicate reason " + r);
}

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(const std::string& s) {
    put(uint32_t(s.size()));
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : s_(bytes) {}
  template <class T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_string() {
    uint32_t n = get<uint32_t>();
    need(n);
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  void done() const {
    if (pos_ != s_.size()) throw InputError("corpus ranks: trailing bytes in a message from another rank");
  }

 private:
  void need(size_t n) const {
    if (s_.size() - pos_ < n) throw InputError("corpus ranks: a message from another rank is cut short");
  }
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Candidate> candidates_of(const std::vector<Sample>& samples) {
  std::vector<Candidate> out(samples.size());
  for (size_t k = 0; k < samples.size(); ++k) {
    out[k].passed = samples[k].rejection.empty();
    if (!out[k].passed) continue;
    out[k].id = samples[k].id;
    out[k].fingerprint = samples[k].fingerprint;
  }
  return out;
}

BlockVerdict admit_block(Deduplicator& dedup, const std::vector<Candidate>& block, long need) {
  auto t0 = std::chrono::steady_clock::now();
  BlockVerdict v;
  v.examined = 0;
  for (const Candidate& c : block) {
    if (v.kept >= need) break;
    ++v.examined;
    Verdict d;
    if (c.passed) {
      d.duplicate = dedup.admit(c.id, c.fingerprint, &d.of);
      if (d.duplicate.empty()) ++v.kept;
    }
    v.verdicts.push_back(std::move(d));
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

void apply_verdict(const BlockVerdict& v, std::vector<Sample>& samples) {
  for (long k = 0; k < v.examined; ++k) {
    const Verdict& d = v.verdicts[size_t(k)];
    if (d.duplicate.empty()) continue;
    samples[size_t(k)].rejection = d.duplicate;
    samples[size_t(k)].rejection_detail = "duplicates " + d.of;
  }
}

std::string encode_candidates(const std::vector<Candidate>& block) {
  Writer w;
  w.put(uint64_t(block.size()));
  for (const Candidate& c : block) {
    w.put(uint8_t(c.passed));
    if (!c.passed) continue;
    w.put_string(c.id);
    w.put(c.fingerprint.text);
    w.put(c.fingerprint.signature);
    w.put(c.fingerprint.structure);
  }
  return w.take();
}

std::vector<Candidate> decode_candidates(const std::string& bytes) {
  Reader r(bytes);
  uint64_t n = r.get<uint64_t>();
  if (n > bytes.size()) throw InputError("corpus ranks: a candidate block with an impossible count");
  std::vector<Candidate> out(n);
  for (Candidate& c : out) {
    c.passed = r.get<uint8_t>() != 0;
    if (!c.passed) continue;
    c.id = r.get_string();
    c.fingerprint.text = r.get<uint64_t>();
    c.fingerprint.signature = r.get<MinHash>();
    c.fingerprint.structure = r.get<uint64_t>();
  }
  r.done();
  return out;
}

std::string encode_verdicts(const std::vector<BlockVerdict>& blocks) {
  Writer w;
  w.put(uint64_t(blocks.size()));
  for (const BlockVerdict& b : blocks) {
    w.put(int64_t(b.examined));
    w.put(int64_t(b.kept));
    w.put(b.seconds);
    for (long k = 0; k < b.examined; ++k) {
      const Verdict& d = b.verdicts[size_t(k)];
      uint8_t code = reason_code(d.duplicate);
      w.put(code);
      if (code) w.put_string(d.of);
    }
  }
  return w.take();
}

std::vector<BlockVerdict> decode_verdicts(const std::string& bytes) {
  Reader r(bytes);
  uint64_t n = r.get<uint64_t>();
  if (n > bytes.size()) throw InputError("corpus ranks: a verdict message with an impossible count");
  std::vector<BlockVerdict> out(n);
  for (BlockVerdict& b : out) {
    b.examined = long(r.get<int64_t>());
    b.kept = long(r.get<int64_t>());
    b.seconds = r.get<double>();
    if (b.examined < -1 || b.examined > long(bytes.size()))
      throw InputError("corpus ranks: a verdict with an impossible count");
    for (long k = 0; k < b.examined; ++k) {
      Verdict d;
      uint8_t code = r.get<uint8_t>();
      if (code > 3) throw InputError("corpus ranks: an unknown duplicate reason in a verdict");
      d.duplicate = kDuplicateReasons[code];
      if (code) d.of = r.get_string();
      b.verdicts.push_back(std::move(d));
    }
  }
  r.done();
  return out;
}

}  // namespace trex::ordata
