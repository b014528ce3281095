// Number slots (issue 16): the numbers of a prompt become slot tokens <n_1>, <n_2>, ... and the
// model writes a slot where its answer repeats one of them; decoding puts the request's number
// back. This is the number mapping of math-word-problem solvers (Wang et al. 2017, "Deep Neural
// Solver for Math Word Problems"): a small model places a slot like any other token, where
// copying a number's digits from 200-1000 tokens back is what it failed to learn (issue 16's
// copy pilots, sessions 10-18).
//
// A tokenizer trained with number_slots = K > 0 has the K slot pieces (tokenizer.h); the chat
// template (chat_template.h) then maps every conversation it renders, for training and for
// serving alike:
// - the prompt's numbers are the distinct numbers of its system and user messages, in the order
//   they first appear; the first K of them get slots 1..K (later ones stay digits);
// - every message (the assistant's too) is rewritten: each number whose text is exactly one of
//   the numbers of the system and user messages up to it (for an assistant's message: before it)
//   becomes its slot; any other number stays digits. In a single-turn chat that is the prompt's
//   numbers; in a multi-turn one an earlier answer never holds the slot of a number that only a
//   later turn brings, so it reads the same in training, alone and in a later turn's prompt;
// - the slots past the prompt's count are never drawn (unfillable_slot_ids, chat_template.h:
//   trex serve and trex generate take their logits as -inf);
// - a completion's slots are replaced by the prompt's numbers (SlotDecoder); a slot past the
//   prompt's count (spelled as text, piece by piece) is an error (NumberSlotError), which trex
//   serve answers with HTTP 422 and trex eval gen scores as a failed completion.
// A number is a run of ASCII digits, with one "." and more digits, that is not part of a word: the
// character before it is not a letter, digit, "_" or "."; the one after is not a letter, digit or
// "_" ("x1", "2nd", "1e5" are left alone). Matching is by exact text ("17" and "17.0" are two
// numbers), so decoding gives back the very text the prompt had.
// Text that already spells a slot ("<n_3>") is read as that slot: such text cannot round-trip.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trex::train {

// "<n_1>" for i = 1.
std::string slot_piece(int i);

// The slot a spelling at text[at] names ("<n_12>" -> 12) and its length, or 0 when there is none.
int slot_at(std::string_view text, size_t at, size_t* length);

struct NumberSpan {
  size_t begin = 0, end = 0;
};
// The numbers of `text` (the rule above), in order.
std::vector<NumberSpan> number_spans(std::string_view text);

// Appends the distinct numbers of `text` that are not in `numbers` yet, until there are `limit`.
void collect_numbers(std::string_view text, size_t limit, std::vector<std::string>* numbers);

// `text` with each number that is numbers[i] written as slot i + 1.
std::string to_slots(std::string_view text, const std::vector<std::string>& numbers);

// A slot in a completion with no number of the prompt behind it.
class NumberSlotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Replaces slots by the prompt's numbers in text that arrives in pieces (a stream): a piece that
// ends inside what may be a slot's spelling ("...<n_1") keeps that tail until the next piece.
class SlotDecoder {
 public:
  explicit SlotDecoder(std::vector<std::string> numbers) : numbers_(std::move(numbers)) {}
  // The decoded text that is final so far. Throws NumberSlotError.
  std::string push(std::string_view piece);
  // The rest (a held tail that turned out not to be a slot).
  std::string flush();

 private:
  std::vector<std::string> numbers_;
  std::string held_;
  std::string decode_ready(bool final);
};

// The whole `text` decoded (SlotDecoder on one piece). Throws NumberSlotError.
std::string from_slots(std::string_view text, const std::vector<std::string>& numbers);

}  // namespace trex::train
