// Whole-number pieces for the tokenizer: the numbers a corpus uses most, each one token.
//
// Why: a model copies a single token from its context far more easily (attend to the matching
// place, emit that token) than a number spelt digit by digit, where every later digit needs the
// position of the one before (issue 16's copy pilots: first digit ~0.3, later digits at chance).
//
// How they sit in a SentencePiece model: as USER_DEFINED pieces appended after the trained
// pieces (ids vocab_trained .. vocab_trained + n - 1), so the ids trex fixes (specials 0-6, the
// 256 byte pieces from 7) do not move. SentencePiece itself would match such pieces inside longer
// numbers ("3456" in "34567"); the tokenizer does not let it (tokenizer.cc: a run of digits is one
// piece when the whole run is a number piece, else one piece a digit).
//
// The public sentencepiece headers give no access to a piece's type, so the two functions that
// touch the serialized ModelProto read and write its protobuf wire format directly (field 1 of
// ModelProto is the repeated SentencePiece {1: piece, 2: score, 3: type}; USER_DEFINED = 4).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trex::train {

// The maximal runs of ASCII digits in `texts` that have 2..max_digits digits, most frequent
// first (ties in byte order), at most `count` of them. Single digits are left out: with digits
// split they are pieces already.
std::vector<std::string> frequent_numbers(const std::vector<std::string>& texts, int count, int max_digits);

// `model_proto` with `pieces` appended as USER_DEFINED pieces (score 0), in that order.
std::string append_user_defined_pieces(std::string model_proto, const std::vector<std::string>& pieces);

// The USER_DEFINED pieces of a serialized ModelProto, in id order. Throws std::runtime_error on
// a malformed message (the caller has loaded it with SentencePiece already, so this means a bug).
std::vector<std::string> user_defined_pieces(std::string_view model_proto);

}  // namespace trex::train
