// Whole-number pieces: which numbers a corpus gives, and the USER_DEFINED pieces written into and
// read back from a SentencePiece ModelProto's wire format.
#include "trex/train/number_pieces.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_text.h"
#include "trex/train/tokenizer.h"

namespace trex::train {
namespace {

TEST(NumberPieces, FrequentNumbersAreMaximalRunsOfTwoToMaxDigitsMostUsedFirst) {
  // "12345" is one run of 5 digits (not "1234" + "5"); "7" and "x7" have one digit; ties by bytes.
  const std::vector<std::string> texts = {"a 37 b 37 c 210 d 12345 e 7 x7 f 210", "g 37 h 99 i 2.5 j 88"};
  EXPECT_EQ(frequent_numbers(texts, 10, 4), (std::vector<std::string>{"37", "210", "88", "99"}));
  EXPECT_EQ(frequent_numbers(texts, 2, 4), (std::vector<std::string>{"37", "210"}));
  EXPECT_EQ(frequent_numbers(texts, 10, 5), (std::vector<std::string>{"37", "210", "12345", "88", "99"}));
  EXPECT_EQ(frequent_numbers(texts, 10, 2), (std::vector<std::string>{"37", "88", "99"}));
  EXPECT_TRUE(frequent_numbers(texts, 0, 4).empty());
}

TEST(NumberPieces, AppendedPiecesAreReadBackInOrderAndNothingElseIsUserDefined) {
  TokenizerOptions o;
  o.vocab = 400;
  const Tokenizer plain = Tokenizer::train({testing::license_texts()[0]}, o);
  EXPECT_TRUE(user_defined_pieces(plain.serialized()).empty());
  const std::string proto = append_user_defined_pieces(plain.serialized(), {"12", "345", "9000"});
  EXPECT_EQ(user_defined_pieces(proto), (std::vector<std::string>{"12", "345", "9000"}));
  // SentencePiece reads the result, the new pieces last, the fixed ids in place.
  const Tokenizer t = Tokenizer::from_serialized(proto, "appended");
  EXPECT_EQ(t.vocab_size(), plain.vocab_size() + 3);
  EXPECT_EQ(t.piece(plain.vocab_size()), "12");
  EXPECT_EQ(t.piece(plain.vocab_size() + 2), "9000");
  EXPECT_EQ(t.piece(7), "<0x00>");
  EXPECT_EQ(t.number_piece_count(), 3);
}

TEST(NumberPieces, AMalformedProtoThrows) {
  EXPECT_THROW(user_defined_pieces(std::string("\x0a\x05\x0a\x01", 4)), std::runtime_error);  // runs past the end
  EXPECT_THROW(user_defined_pieces(std::string("\x0a\xff", 2)), std::runtime_error);          // truncated varint
  EXPECT_THROW(user_defined_pieces(std::string("\x0b", 1)), std::runtime_error);              // group wire type
}

}  // namespace
}  // namespace trex::train
