// Each token id's text, decoded once: what a streaming response needs per generated token
// without a SentencePiece call. SentencePiece's Decode builds a protobuf of the pieces for
// every call; at eight streams that was ~16% of the HTTP threads' CPU in trex serve (session
// 18, perf). The tokenizer decodes every piece on its own except runs of byte pieces, which it
// decodes together as UTF-8 (tokenizer.h: no dummy prefix, whitespace kept), so the text of
// ids without byte pieces is their texts joined; ids with byte pieces go to the tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/train/tokenizer.h"

namespace trex::serve {

class PieceTexts {
 public:
  // Decodes every id of `tok` once (v4-nano's 4096 ids: a few ms). `tok` must outlive this.
  explicit PieceTexts(const train::Tokenizer& tok);

  // The byte of a byte piece <0x00>..<0xFF>, or -1 for any other id (or one outside the
  // vocabulary).
  int byte(int32_t id) const { return size_t(id) < bytes_.size() ? bytes_[size_t(id)] : -1; }
  // What tok.decode(ids) gives.
  std::string decode(const std::vector<int32_t>& ids) const;
  const train::Tokenizer& tokenizer() const { return tok_; }

 private:
  const train::Tokenizer& tok_;
  std::vector<std::string> texts_;  // [id]: decode({id}) for ids that are not byte pieces
  std::vector<int16_t> bytes_;      // [id]: the byte of a byte piece, -1 otherwise
};

}  // namespace trex::serve
