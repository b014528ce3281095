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
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/serve/piece_texts.h"

namespace trex::serve {

class TextStream {
 public:
  // `texts` must outlive the stream.
  TextStream(const PieceTexts& texts, std::vector<std::string> stop);

  // Adds a token; returns the text that became final. Sets stopped() when a stop string
  // appeared (the text ends before it, the stop string excluded).
  std::string push(int32_t id);
  // The end of generation: everything still held back (but never a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }
  // All text emitted so far.
  const std::string& text() const { return emitted_; }

 private:
  const PieceTexts& texts_;
  std::vector<std::string> stop_;
  std::vector<int32_t> waiting_;  // byte tokens of a character not yet complete
  std::string pending_;           // final text held back as a possible start of a stop string
  std::string emitted_;
  bool stopped_ = false;
};

}  // namespace trex::serve
