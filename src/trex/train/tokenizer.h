// The trainer's tokenizer: a SentencePiece model (BPE, byte fallback) trained on the training
// text itself, with control symbols for the chat format.
//
// Ids: 0 <unk>, 1 <s> (bos), 2 </s> (eos), then the chat control symbols <|system|>,
// <|user|>, <|assistant|>, <|end|> (ids 3..6), then the 256 byte pieces <0x00>..<0xFF>, then
// the learned pieces. Control symbols are never produced by encode() (text that spells
// "<|user|>" is tokenized as ordinary characters, so data cannot forge a role marker); the chat
// template inserts their ids directly. Byte fallback means every string encodes without <unk>:
// a character the model has no piece for becomes its UTF-8 bytes.
//
// Text is not normalized (identity rule, whitespace kept, no dummy prefix), so
// decode(encode(s)) == s for every valid UTF-8 string s, newlines and runs of spaces included.
//
// Training is deterministic for a given text sample and options: SentencePiece's random seed is
// fixed, it runs on one thread, and the input is the caller's sample in the caller's order.
//
// Whole-number pieces (options.number_pieces, number_pieces.h): the numbers the training text uses
// most are one token each, after the learned pieces; a model file that has them is read the same
// way (they travel in the file). encode() then takes each maximal run of digits as one piece when
// the whole run is a number piece and as one token a digit otherwise ("34567" is never "3456" +
// "7"); the text between runs is encoded as before.
//
// Number slots (options.number_slots, number_slots.h): pieces <n_1>..<n_K> after the learned
// (and whole-number) pieces; encode() reads each spelling of a slot 1..K as that piece. The chat
// template maps a conversation's numbers to them when the tokenizer has any.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace trex::train {

// The chat roles the template renders.
enum class Role { kSystem = 0, kUser = 1, kAssistant = 2 };

struct TokenizerOptions {
  int vocab = 4096;           // total pieces, specials and bytes included; >= 300
  std::string model_type = "bpe";  // bpe | unigram
  // Every digit its own piece (the default): a number is one token a digit. Off, pieces may join
  // digits ("49"), so a copied number is fewer and more distinctive tokens (issue 16's copy pilots).
  bool split_digits = true;
  // Whole-number pieces: this many of the numbers of 2..number_digits digits that the training
  // text uses most become pieces of their own, out of `vocab` (the learned pieces get the rest).
  // 0 (the default) = none, the tokenizer as before. Needs split_digits: a number that is not a
  // piece is one token a digit.
  int number_pieces = 0;
  int number_digits = 4;
  // Number slots: pieces <n_1>..<n_number_slots> (out of `vocab`), to which the chat template
  // maps the prompt's numbers (number_slots.h). 0 (the default) = none, the tokenizer as before.
  int number_slots = 0;
  uint32_t seed = 1;
  // Upper bound on the training sample: SentencePiece reads at most this many sentences.
  int max_sentences = 200000;
};

class Tokenizer {
 public:
  // Trains on `texts` (each a document; split here into chunks of whole lines that
  // SentencePiece accepts). When the text holds too few distinct pieces for `vocab`, the
  // vocabulary is smaller (vocab_size() < options.vocab). Throws InputError (field
  // "tokenizer") when training fails, for instance on an empty sample.
  static Tokenizer train(const std::vector<std::string>& texts, const TokenizerOptions& options);
  // Loads a model file written by save(). Throws InputError naming the path.
  static Tokenizer load(const std::string& path);
  // The serialized model (a SentencePiece ModelProto).
  static Tokenizer from_serialized(const std::string& model_proto, const std::string& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the model file atomically.
  void save(const std::string& path) const;
  const std::string& serialized() const { return proto_; }

  std::vector<int32_t> encode(std::string_view text) const;
  // Control ids (bos, eos, role markers, end) decode to nothing.
  std::string decode(const std::vector<int32_t>& ids) const;
  // The piece of one id ("<0x0A>", "▁the", "<|user|>").
  std::string piece(int32_t id) const;

  int vocab_size() const;
  // How many whole-number pieces the model has (0 for a tokenizer trained without them).
  int number_piece_count() const { return int(numbers_.size()); }
  // How many number slots the model has (0 without them); slot i (1-based) is one piece.
  int number_slot_count() const { return int(slot_ids_.size()); }
  int32_t unk_id() const { return 0; }
  int32_t bos_id() const { return 1; }
  int32_t eos_id() const { return 2; }
  int32_t role_id(Role role) const { return 3 + int32_t(role); }
  int32_t end_id() const { return 6; }
  // True for the byte pieces <0x00>..<0xFF>.
  bool is_byte(int32_t id) const;

 private:
  Tokenizer();
  std::string proto_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  // Whole-number pieces by their text, and the ids of each digit alone (used for a run of
  // digits that is not a number piece); both empty without number pieces.
  std::unordered_map<std::string, int32_t> numbers_;
  std::vector<std::vector<int32_t>> digit_ids_;
  std::vector<int32_t> slot_ids_;  // slot i's id at i - 1
  void encode_numbers(std::string_view text, std::vector<int32_t>* out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>* out) const;
};

// The control symbols in id order from 3: "<|system|>", "<|user|>", "<|assistant|>", "<|end|>".
const std::vector<std::string>& chat_control_symbols();

}  // namespace trex::train
