// Generated tokens to text, a piece at a time, for streaming: each call returns only text that
// can no longer change. Two things can still change the tail of the decoded text: a UTF-8
// character whose bytes arrive as several byte tokens (held back until complete), and
// the start of a stop string (held back until it either completes, which ends the text before
// it, or is contradicted).
//
// Decoding is incremental: a token's text is decoded once, when it can no longer change, so a
// token costs the same at the end of a long answer as at its start (decoding every token's
// whole sequence made a stream's cost grow with the square of its length). The text is the
// same as decoding all tokens at once: the tokenizer decodes each piece on its own except runs
// of byte pieces, which it decodes together as UTF-8 (each byte that does not form a valid
// character becomes U+FFFD), so only the bytes of a character not yet complete (at most 3
// tokens) wait to be decoded with the tokens that follow them. A piece's text comes from
// PieceTexts (decoded once per id), not from a SentencePiece call per token.
//
// With number slots (a chat request's numbers, train/number_slots.h), the slots are filled in
// before stop strings are looked for: a stop string is matched against the text the client
// gets, so one that holds a number fires where a slot wrote that number, and a slot's spelling
// ("<n_1>") never matches one. A slot's spelling not yet complete is held back as well.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trex/serve/piece_texts.h"
#include "trex/train/number_slots.h"

namespace trex::serve {

class TextStream {
 public:
  // `texts` must outlive the stream. `slot_numbers`: the request's numbers, slot i's at i - 1,
  // when its tokenizer has number slots (none: the text is taken as it decodes).
  TextStream(const PieceTexts& texts, std::vector<std::string> stop,
             std::optional<std::vector<std::string>> slot_numbers = std::nullopt);

  // Adds a token; returns the text that became final. Sets stopped() when a stop string
  // appeared (the text ends before it, the stop string excluded). Throws
  // train::NumberSlotError for a slot the request has no number for.
  std::string push(int32_t id);
  // The end of generation: everything still held back, up to a stop string that it completes.
  // Throws train::NumberSlotError as push() does.
  std::string flush();
  bool stopped() const { return stopped_; }
  // All text emitted so far.
  const std::string& text() const { return emitted_; }

 private:
  const PieceTexts& texts_;
  std::vector<std::string> stop_;
  std::optional<train::SlotDecoder> slots_;  // fills the slots of decoded text, when there are any
  std::vector<int32_t> waiting_;  // byte tokens of a character not yet complete
  std::string pending_;           // final text held back as a possible start of a stop string
  // Adds decoded text (its slots filled) to pending_ and returns what became final.
  std::string take(std::string decoded, bool final);
  std::string emitted_;
  bool stopped_ = false;
};

}  // namespace trex::serve
