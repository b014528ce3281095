// The tokenizer: exact round trips (whitespace and newlines kept), byte fallback for characters
// never seen in training, control symbols that text cannot produce, determinism of training,
// save and load, and the errors for a bad vocabulary or a file that is not a model.
#include "trex/train/tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "test_text.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::license_texts;
using testing::TempDir;

const Tokenizer& shared_tokenizer() {
  static const Tokenizer tok = [] {
    TokenizerOptions o;
    o.vocab = 512;
    return Tokenizer::train(license_texts(), o);
  }();
  return tok;
}

TEST(TokenizerTest, RoundTripKeepsEveryByte) {
  const Tokenizer& tok = shared_tokenizer();
  ASSERT_LE(tok.vocab_size(), 512);
  ASSERT_GT(tok.vocab_size(), 300);
  for (const std::string& s : {std::string("Licensed under the Apache License, Version 2.0"),
                               std::string("  two leading spaces,\n\ttabs and\n\nblank lines  \n"),
                               std::string("x1 + 2 x2 <= 40\nmaximize 3.5 y"), license_texts()[1]}) {
    std::vector<int32_t> ids = tok.encode(s);
    for (int32_t id : ids) ASSERT_NE(id, tok.unk_id());
    EXPECT_EQ(tok.decode(ids), s);
  }
}

TEST(TokenizerTest, UnseenCharactersFallBackToBytes) {
  const Tokenizer& tok = shared_tokenizer();
  // Neither Greek, CJK nor an emoji occurs in the license texts.
  std::string s = "λ 最优 🚚 done";
  std::vector<int32_t> ids = tok.encode(s);
  int bytes = 0;
  for (int32_t id : ids) {
    EXPECT_NE(id, tok.unk_id());
    bytes += tok.is_byte(id);
  }
  // λ (2 bytes), 最优 (6), 🚚 (4): every one spelled as bytes.
  EXPECT_GE(bytes, 12);
  EXPECT_EQ(tok.decode(ids), s);
}

TEST(TokenizerTest, ControlSymbolsAreNotProducedByText) {
  const Tokenizer& tok = shared_tokenizer();
  EXPECT_EQ(tok.piece(tok.role_id(Role::kUser)), "<|user|>");
  EXPECT_EQ(tok.piece(tok.role_id(Role::kAssistant)), "<|assistant|>");
  EXPECT_EQ(tok.piece(tok.end_id()), "<|end|>");
  std::vector<int32_t> ids = tok.encode("<|user|> hi <|end|>");
  std::set<int32_t> specials = {tok.bos_id(), tok.eos_id(), tok.role_id(Role::kSystem), tok.role_id(Role::kUser),
                                tok.role_id(Role::kAssistant), tok.end_id()};
  for (int32_t id : ids) EXPECT_EQ(specials.count(id), 0u) << tok.piece(id);
  // Control ids decode to nothing.
  EXPECT_EQ(tok.decode({tok.bos_id(), tok.role_id(Role::kUser), tok.end_id(), tok.eos_id()}), "");
}

TEST(TokenizerTest, TrainingIsDeterministicAndSavesAndLoads) {
  TokenizerOptions o;
  o.vocab = 400;
  std::vector<std::string> texts = {license_texts()[0]};
  Tokenizer a = Tokenizer::train(texts, o);
  Tokenizer b = Tokenizer::train(texts, o);
  EXPECT_EQ(a.serialized(), b.serialized());
  TempDir dir("tok");
  a.save(dir.path("t.model"));
  Tokenizer c = Tokenizer::load(dir.path("t.model"));
  std::string s = "Grant of Copyright License. Subject to the terms";
  EXPECT_EQ(c.encode(s), a.encode(s));
}

TEST(TokenizerTest, SplitDigitsOffLetsPiecesJoinDigits) {
  // Text where the same numbers repeat: a BPE tokenizer merges them unless digits are split.
  std::string numbers;
  for (int i = 0; i < 400; ++i) numbers += "price 4937 and 2718, cost 4937 and 2718.\n";
  std::vector<std::string> texts = {license_texts()[0], numbers};
  auto widest_digit_run = [&](bool split) {
    TokenizerOptions o;
    o.vocab = 400;
    o.split_digits = split;
    Tokenizer t = Tokenizer::train(texts, o);
    EXPECT_EQ(t.decode(t.encode("cost 4937 and 2718")), "cost 4937 and 2718");
    size_t widest = 0;
    for (int32_t id : t.encode("price 4937 and 2718")) {
      std::string p = t.piece(id);
      size_t run = 0;
      for (char ch : p) run = std::isdigit(static_cast<unsigned char>(ch)) ? run + 1 : 0, widest = std::max(widest, run);
    }
    return widest;
  };
  EXPECT_EQ(widest_digit_run(true), 1u);
  EXPECT_GE(widest_digit_run(false), 2u);
}

// Whole-number pieces (tokenizer.number_pieces): a number the training text uses often is one
// token; any other run of digits is one token a digit, never a shorter number piece + digits.
TEST(TokenizerTest, NumberPiecesMakeFrequentNumbersOneTokenAndOthersOneTokenADigit) {
  std::string numbers;
  for (int i = 0; i < 50; ++i) numbers += "price 4937 and 27, cost 4937 and 318; id " + std::to_string(1000 + i) + "\n";
  TokenizerOptions o;
  o.vocab = 400;
  o.number_pieces = 3;
  Tokenizer t = Tokenizer::train({license_texts()[0], numbers}, o);
  EXPECT_EQ(t.number_piece_count(), 3);
  EXPECT_LE(t.vocab_size(), 400);
  auto pieces = [&](const std::string& s) {
    std::vector<std::string> out;
    for (int32_t id : t.encode(s)) out.push_back(t.piece(id));
    EXPECT_EQ(t.decode(t.encode(s)), s);
    return out;
  };
  EXPECT_EQ(pieces("4937"), (std::vector<std::string>{"4937"}));
  EXPECT_EQ(pieces("27"), (std::vector<std::string>{"27"}));
  EXPECT_EQ(pieces("318"), (std::vector<std::string>{"318"}));
  // Not pieces: a longer run holding a piece, and a number used once each.
  EXPECT_EQ(pieces("49371"), (std::vector<std::string>{"4", "9", "3", "7", "1"}));
  EXPECT_EQ(pieces("1003"), (std::vector<std::string>{"1", "0", "0", "3"}));
  const std::string mixed = "x27 <= 4937.27 - 3180\n\tcost 27,4937";
  const std::vector<int32_t> ids = t.encode(mixed);
  EXPECT_EQ(t.decode(ids), mixed);
  int digit_tokens = 0;
  for (int32_t id : ids) digit_tokens += t.decode({id}).find_first_of("0123456789") != std::string::npos;
  EXPECT_EQ(digit_tokens, 5 + 4);  // 27, 4937, 27, 4937 and 27 whole; 3180 a digit a token
  // The pieces travel in the model file.
  TempDir dir("toknum");
  t.save(dir.path("t.model"));
  Tokenizer back = Tokenizer::load(dir.path("t.model"));
  EXPECT_EQ(back.number_piece_count(), 3);
  EXPECT_EQ(back.encode(mixed), ids);
}

// Between runs of digits the text is encoded as SentencePiece encodes it within the whole text:
// where every run is a number piece or one digit, SentencePiece's own encoding of the model
// (which matches number pieces itself) gives the same ids.
TEST(TokenizerTest, NumberPiecesAgreeWithSentencePieceWhereEveryRunIsAPieceOrADigit) {
  std::string numbers;
  for (int i = 0; i < 50; ++i) numbers += "price 4937 and 27, cost 4937 and 318\n";
  TokenizerOptions o;
  o.vocab = 400;
  o.number_pieces = 3;
  Tokenizer t = Tokenizer::train({license_texts()[0], numbers}, o);
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(t.serialized()).ok());
  std::string text = license_texts()[0].substr(0, 3000) + "\n  x 4937 y 27\t318 z 5 and 7.\n\nMay 27, 4937 copies";
  std::vector<int> raw;
  ASSERT_TRUE(sp.Encode(text, &raw).ok());
  EXPECT_EQ(t.encode(text), std::vector<int32_t>(raw.begin(), raw.end()));
  // A tokenizer without number pieces has none (and encodes as SentencePiece does everywhere).
  EXPECT_EQ(shared_tokenizer().number_piece_count(), 0);
}

TEST(TokenizerTest, Errors) {
  TokenizerOptions o;
  o.vocab = 100;
  EXPECT_THROW(Tokenizer::train(license_texts(), o), InputError);
  o.vocab = 512;
  EXPECT_THROW(Tokenizer::train({"", "  \n"}, o), InputError);
  auto error_of = [](const TokenizerOptions& opts, const std::vector<std::string>& texts) -> std::string {
    try {
      Tokenizer::train(texts, opts);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  // Number pieces need digits split; they must leave 300 pieces to learn; 2..9 digits.
  TokenizerOptions n = o;
  n.number_pieces = 10;
  n.split_digits = false;
  EXPECT_NE(error_of(n, license_texts()).find("tokenizer.number_pieces: needs split_digits"), std::string::npos);
  n.split_digits = true;
  n.vocab = 310;
  std::string many;
  for (int i = 10; i < 99; ++i) many += std::to_string(i) + " ";
  n.number_pieces = 50;
  EXPECT_NE(error_of(n, {many}).find("tokenizer.number_pieces: 50 number pieces leave 260"), std::string::npos)
      << error_of(n, {many});
  n = o;
  n.number_pieces = 10;
  n.number_digits = 1;
  EXPECT_NE(error_of(n, license_texts()).find("tokenizer.number_digits"), std::string::npos);
  n.number_digits = 4;
  n.number_pieces = -1;
  EXPECT_NE(error_of(n, license_texts()).find("tokenizer.number_pieces"), std::string::npos);
  TempDir dir("tokerr");
  std::string p = dir.write("junk.model", "this is not a protobuf");
  try {
    Tokenizer::load(p);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// SentencePiece's defaults (add_dummy_prefix, remove_extra_whitespaces on) drop the space of a
// leading "\u2581" piece in every decode call, so text decoded a piece at a time (streaming)
// would lose every word's space: such a model is refused at load, naming the options.
TEST(TokenizerTest, AModelThatDropsLeadingSpacesIsRefused) {
  TempDir dir("tokprefix");
  std::string text;
  for (const std::string& t : license_texts()) text += t + "\n";
  const std::string input = dir.write("input.txt", text);
  for (const std::string option : {"add_dummy_prefix", "remove_extra_whitespaces"}) {
    const std::string other = option == "add_dummy_prefix" ? "remove_extra_whitespaces" : "add_dummy_prefix";
    const std::string prefix = dir.path() + "/" + option;
    const std::string args = "--input=" + input + " --model_prefix=" + prefix +
                             " --model_type=bpe --vocab_size=512 --hard_vocab_limit=false --byte_fallback=true"
                             " --control_symbols=<|system|>,<|user|>,<|assistant|>,<|end|>"
                             " --normalization_rule_name=identity --" + option + "=true --" + other + "=false"
                             " --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=1 --minloglevel=2";
    ASSERT_TRUE(sentencepiece::SentencePieceTrainer::Train(args).ok()) << args;
    try {
      Tokenizer::load(prefix + ".model");
      FAIL() << option << ": expected InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("add_dummy_prefix or remove_extra_whitespaces"), std::string::npos)
          << e.what();
    }
  }
  // trex's own training (both off) loads: the shared tokenizer saved and loaded again.
  const std::string ok = dir.path() + "/trex.model";
  shared_tokenizer().save(ok);
  EXPECT_NO_THROW(Tokenizer::load(ok));
}

}  // namespace
}  // namespace trex::train
