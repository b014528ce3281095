#include "trex/serve/text_stream.h"

#include <algorithm>

namespace trex::serve {

namespace {

// How many tokens at the end of `ids` are the bytes of a UTF-8 character not yet complete: a
// lead byte whose continuation bytes have not all arrived, and those that have. Decoding the
// tokens before them on their own gives the text that decoding them with all that follows
// gives: no valid character spans a lead byte, so the tokenizer's UTF-8 decoder, which takes
// an invalid byte as one U+FFFD and moves on by one byte, stands at that lead byte either way.
size_t incomplete_tail(const PieceTexts& texts, const std::vector<int32_t>& ids) {
  for (size_t back = 1; back <= std::min<size_t>(3, ids.size()); ++back) {
    const int b = texts.byte(ids[ids.size() - back]);
    if (b < 0) return 0;
    const unsigned c = unsigned(b);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

TextStream::TextStream(const PieceTexts& texts, std::vector<std::string> stop,
                       std::optional<std::vector<std::string>> slot_numbers)
    : texts_(texts), stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
  if (slot_numbers) slots_.emplace(std::move(*slot_numbers));
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return {};
  waiting_.push_back(id);
  const size_t keep = incomplete_tail(texts_, waiting_);
  std::string decoded;
  if (keep < waiting_.size()) {
    decoded = texts_.decode(std::vector<int32_t>(waiting_.begin(), waiting_.end() - keep));
    waiting_.erase(waiting_.begin(), waiting_.end() - keep);
  }
  return take(std::move(decoded), false);
}

std::string TextStream::flush() {
  if (stopped_) return {};
  // The bytes of an unfinished character decode as the whole sequence's decoding gives them.
  std::string decoded = texts_.decode(waiting_);
  waiting_.clear();
  return take(std::move(decoded), true);
}

std::string TextStream::take(std::string decoded, bool final) {
  if (slots_) {
    // The slot decoder holds back a tail that may still become a slot ("<n_1"); at the end it
    // lets it go as text.
    decoded = slots_->push(decoded);
    if (final) decoded += slots_->flush();
  }
  pending_ += decoded;
  // Every stop string that appears in the final text starts inside pending_: pending_ keeps
  // the longest tail that is a proper prefix of a stop string (below), so a match begun
  // before it would have been held back.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    emitted_ += out;
    return out;
  }
  // Hold back the longest tail that is a proper prefix of a stop string (nothing at the end).
  size_t hold = 0;
  if (!final)
    for (const std::string& s : stop_)
      for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k)
        if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
  if (hold == pending_.size()) return {};
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  emitted_ += out;
  return out;
}

}  // namespace trex::serve
