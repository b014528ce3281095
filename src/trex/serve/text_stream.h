// Generated tokens to text, a piece at a time, for streaming: each call returns only text that
// can no longer change. Two things can still change the tail of the decoded text: a UTF-8
// character whose bytes arrive as several byte tokens (decoded as U+FFFD until complete), and
// the start of a stop string (held back until it either completes, which ends the text before
// it, or is contradicted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/train/tokenizer.h"

namespace trex::serve {

class TextStream {
 public:
  TextStream(const train::Tokenizer& tok, std::vector<std::string> stop);

  // Adds a token; returns the text that became final. Sets stopped() when a stop string
  // appeared (the text ends before it, the stop string excluded).
  std::string push(int32_t id);
  // The end of generation: everything still held back (but never a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }
  // All text emitted so far.
  const std::string& text() const { return emitted_; }

 private:
  const train::Tokenizer& tok_;
  std::vector<std::string> stop_;
  std::vector<int32_t> ids_;
  std::string emitted_;
  bool stopped_ = false;
};

}  // namespace trex::serve
