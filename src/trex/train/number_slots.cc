#include "trex/train/number_slots.h"

#include <algorithm>

namespace trex::train {
namespace {

constexpr size_t kMaxSlotDigits = 4;  // slots 1..9999

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// True when text[at..] is a beginning of a slot's spelling that ends with the text ("<", "<n_",
// "<n_12"), so the next piece of a stream may complete it.
bool slot_prefix_at_end(std::string_view text, size_t at) {
  const std::string_view rest = text.substr(at);
  const std::string_view head = "<n_";
  if (rest.size() <= head.size()) return head.substr(0, rest.size()) == rest;
  if (rest.substr(0, head.size()) != head) return false;
  const std::string_view digits = rest.substr(head.size());
  if (digits.size() > kMaxSlotDigits || digits[0] == '0') return false;
  return std::all_of(digits.begin(), digits.end(), is_digit);
}

}  // namespace

std::string slot_piece(int i) { return "<n_" + std::to_string(i) + ">"; }

int slot_at(std::string_view text, size_t at, size_t* length) {
  if (text.substr(at, 3) != "<n_") return 0;
  size_t j = at + 3;
  if (j >= text.size() || !is_digit(text[j]) || text[j] == '0') return 0;
  int value = 0;
  while (j < text.size() && is_digit(text[j]) && j - (at + 3) < kMaxSlotDigits) value = value * 10 + (text[j++] - '0');
  if (j >= text.size() || text[j] != '>') return 0;
  *length = j + 1 - at;
  return value;
}

std::vector<NumberSpan> number_spans(std::string_view text) {
  std::vector<NumberSpan> out;
  for (size_t i = 0; i < text.size();) {
    if (!is_digit(text[i]) || (i > 0 && (is_word(text[i - 1]) || text[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_digit(text[j])) ++j;
    if (j + 1 < text.size() && text[j] == '.' && is_digit(text[j + 1])) {
      j += 1;
      while (j < text.size() && is_digit(text[j])) ++j;
    }
    if (j == text.size() || !is_word(text[j])) out.push_back({i, j});
    // Skip the rest of the run (a number glued to a word is no number, nor is its tail).
    while (j < text.size() && (is_word(text[j]) || text[j] == '.')) ++j;
    i = j;
  }
  return out;
}

void collect_numbers(std::string_view text, size_t limit, std::vector<std::string>* numbers) {
  for (const NumberSpan& s : number_spans(text)) {
    if (numbers->size() >= limit) return;
    const std::string_view n = text.substr(s.begin, s.end - s.begin);
    if (std::find(numbers->begin(), numbers->end(), n) == numbers->end()) numbers->emplace_back(n);
  }
}

std::string to_slots(std::string_view text, const std::vector<std::string>& numbers) {
  std::string out;
  size_t at = 0;
  for (const NumberSpan& s : number_spans(text)) {
    const std::string_view n = text.substr(s.begin, s.end - s.begin);
    const auto it = std::find(numbers.begin(), numbers.end(), n);
    if (it == numbers.end()) continue;
    out.append(text.substr(at, s.begin - at));
    out += slot_piece(int(it - numbers.begin()) + 1);
    at = s.end;
  }
  out.append(text.substr(at));
  return out;
}

std::string SlotDecoder::decode_ready(bool final) {
  std::string out;
  size_t i = 0;
  while (i < held_.size()) {
    if (held_[i] != '<') {
      out += held_[i++];
      continue;
    }
    size_t length = 0;
    const int slot = slot_at(held_, i, &length);
    if (slot > 0) {
      if (size_t(slot) > numbers_.size())
        throw NumberSlotError("the completion writes number slot " + slot_piece(slot) + ", but the prompt has " +
                              std::to_string(numbers_.size()) + " number" + (numbers_.size() == 1 ? "" : "s"));
      out += numbers_[size_t(slot) - 1];
      i += length;
    } else if (!final && slot_prefix_at_end(held_, i)) {
      break;
    } else {
      out += held_[i++];
    }
  }
  held_.erase(0, i);
  return out;
}

std::string SlotDecoder::push(std::string_view piece) {
  held_.append(piece);
  return decode_ready(false);
}

std::string SlotDecoder::flush() { return decode_ready(true); }

std::string from_slots(std::string_view text, const std::vector<std::string>& numbers) {
  SlotDecoder d(numbers);
  std::string out = d.push(text);
  return out + d.flush();
}

}  // namespace trex::train
