// PieceTexts: each id's text decoded once gives what the tokenizer's decode gives, for random
// sequences over the whole vocabulary (learned pieces, multibyte pieces, byte pieces that form
// characters or not, control ids, <unk>), and the byte of every byte piece.
#include "trex/serve/piece_texts.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace trex::serve {
namespace {

const train::Tokenizer& tokenizer() {
  static const train::Tokenizer tok = [] {
    std::vector<std::string> lines;
    for (int i = 0; i < 200; ++i)
      lines.push_back("le café à Zürich " + std::to_string(i) + " € 日本語  tabs\tand\nlines → " +
                      std::to_string(i * 13) + "\n");
    train::TokenizerOptions o;
    o.vocab = 360;
    return train::Tokenizer::train(lines, o);
  }();
  return tok;
}

TEST(PieceTexts, EveryBytePieceHasItsByteAndNoOtherIdHasOne) {
  const train::Tokenizer& tok = tokenizer();
  const PieceTexts texts(tok);
  int bytes = 0;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_byte(id)) {
      char piece[8];
      std::snprintf(piece, sizeof piece, "<0x%02X>", unsigned(texts.byte(id)));
      EXPECT_EQ(tok.piece(id), piece) << id;
      ++bytes;
    } else {
      EXPECT_EQ(texts.byte(id), -1) << id;
    }
  }
  EXPECT_EQ(bytes, 256);
  EXPECT_EQ(texts.byte(-1), -1);
  EXPECT_EQ(texts.byte(tok.vocab_size()), -1);
}

TEST(PieceTexts, DecodeEqualsTheTokenizersOnRandomSequences) {
  const train::Tokenizer& tok = tokenizer();
  const PieceTexts texts(tok);
  std::mt19937 rng(18);
  int without_bytes = 0;
  for (int seq = 0; seq < 2000; ++seq) {
    // Half the sequences without byte pieces (the joined texts), half from the whole vocabulary.
    const bool no_bytes = seq % 2 == 0;
    std::vector<int32_t> ids;
    for (int n = int(rng() % 12); n >= 0; --n) {
      int32_t id = int32_t(rng() % uint32_t(tok.vocab_size()));
      while (no_bytes && tok.is_byte(id)) id = int32_t(rng() % uint32_t(tok.vocab_size()));
      ids.push_back(id);
    }
    without_bytes += no_bytes;
    ASSERT_EQ(texts.decode(ids), tok.decode(ids)) << "sequence " << seq;
  }
  EXPECT_EQ(texts.decode({}), tok.decode({}));
  EXPECT_EQ(without_bytes, 1000);
}

}  // namespace
}  // namespace trex::serve
