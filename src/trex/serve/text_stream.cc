#include "trex/serve/text_stream.h"

#include <algorithm>

namespace trex::serve {

namespace {

// Bytes at the end of s that may still be completed into a different character: an incomplete
// UTF-8 sequence, or the replacement character SentencePiece gives for one.
size_t unstable_tail(const std::string& s) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0) return 3;
  // A lead byte whose continuation bytes have not all arrived.
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

TextStream::TextStream(const train::Tokenizer& tok, std::vector<std::string> stop)
    : tok_(tok), stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return {};
  ids_.push_back(id);
  const std::string all = tok_.decode(ids_);
  // The earliest stop string that appears in the text not yet emitted (searching from a little
  // before it, since a stop string may straddle the boundary).
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) {
    const size_t from = emitted_.size() >= s.size() ? emitted_.size() - s.size() + 1 : 0;
    const size_t at = all.find(s, from);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = cut > emitted_.size() ? all.substr(emitted_.size(), cut - emitted_.size()) : "";
    emitted_ += out;
    return out;
  }
  size_t stable = all.size() - unstable_tail(all);
  // Hold back the longest tail that is a proper prefix of a stop string.
  for (const std::string& s : stop_)
    for (size_t k = std::min(s.size() - 1, all.size()); k > 0; --k)
      if (all.compare(all.size() - k, k, s, 0, k) == 0) {
        stable = std::min(stable, all.size() - k);
        break;
      }
  if (stable <= emitted_.size()) return {};
  std::string out = all.substr(emitted_.size(), stable - emitted_.size());
  emitted_ += out;
  return out;
}

std::string TextStream::flush() {
  if (stopped_) return {};
  const std::string all = tok_.decode(ids_);
  if (all.size() <= emitted_.size()) return {};
  std::string out = all.substr(emitted_.size());
  emitted_ += out;
  return out;
}

}  // namespace trex::serve
