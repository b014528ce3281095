#include "trex/train/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <unordered_map>

#include "trex/train/number_pieces.h"
#include "trex/train/number_slots.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

// SentencePiece drops training sentences longer than max_sentence_length bytes; documents are
// fed as chunks of whole lines below this size so newlines and indentation are learned too.
constexpr size_t kChunkBytes = 2000;
constexpr size_t kMaxSentenceBytes = 8192;

// A cut at `pos` that does not split a UTF-8 sequence (moves back over continuation bytes).
size_t utf8_boundary(std::string_view s, size_t pos) {
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

class ChunkIterator : public sentencepiece::SentenceIterator {
 public:
  explicit ChunkIterator(std::vector<std::string> chunks) : chunks_(std::move(chunks)) {}
  bool done() const override { return i_ >= chunks_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return chunks_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> chunks_;
  size_t i_ = 0;
};

std::vector<std::string> chunk_documents(const std::vector<std::string>& texts, size_t limit) {
  std::vector<std::string> chunks;
  for (const std::string& text : texts) {
    std::string_view rest = text;
    while (!rest.empty() && chunks.size() < limit) {
      size_t cut = rest.size();
      if (cut > kChunkBytes) {
        size_t nl = rest.rfind('\n', kChunkBytes);
        cut = (nl != std::string_view::npos && nl > 0) ? nl + 1 : utf8_boundary(rest, kChunkBytes);
        if (cut == 0) cut = kChunkBytes;
      }
      std::string_view piece = rest.substr(0, cut);
      if (piece.find_first_not_of(" \t\r\n") != std::string_view::npos) chunks.emplace_back(piece);
      rest.remove_prefix(cut);
    }
  }
  return chunks;
}

}  // namespace

const std::vector<std::string>& chat_control_symbols() {
  static const std::vector<std::string> kSymbols = {"<|system|>", "<|user|>", "<|assistant|>",
                                                    "<|end|>"};
  return kSymbols;
}

Tokenizer::Tokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::train(const std::vector<std::string>& texts, const TokenizerOptions& options) {
  if (options.vocab < 300)
    throw InputError::field("tokenizer.vocab", "must be at least 300 (specials and 256 byte pieces), got " +
                                                   std::to_string(options.vocab));
  if (options.model_type != "bpe" && options.model_type != "unigram")
    throw InputError::field("tokenizer.model_type", "must be \"bpe\" or \"unigram\", got \"" +
                                                        options.model_type + "\"");
  if (options.number_pieces < 0)
    throw InputError::field("tokenizer.number_pieces", "must be 0 or more, got " + std::to_string(options.number_pieces));
  if (options.number_pieces > 0 && !options.split_digits)
    throw InputError::field("tokenizer.number_pieces",
                            "needs split_digits = true (a number that is not a piece is one token a digit)");
  if (options.number_digits < 2 || options.number_digits > 9)
    throw InputError::field("tokenizer.number_digits", "must be 2..9, got " + std::to_string(options.number_digits));
  if (options.number_slots < 0 || options.number_slots > 9999)
    throw InputError::field("tokenizer.number_slots", "must be 0..9999, got " + std::to_string(options.number_slots));
  std::vector<std::string> numbers =
      options.number_pieces > 0 ? frequent_numbers(texts, options.number_pieces, options.number_digits)
                                : std::vector<std::string>{};
  const size_t number_pieces = numbers.size();
  for (int i = 1; i <= options.number_slots; ++i) numbers.push_back(slot_piece(i));
  // The learned pieces get what the number pieces and slots leave of the vocabulary.
  const int learned = options.vocab - int(numbers.size());
  if (learned < 300)
    throw InputError::field(number_pieces > 0 ? "tokenizer.number_pieces" : "tokenizer.number_slots",
                            std::to_string(number_pieces) + " number pieces" +
                                (options.number_slots > 0 ? " and " + std::to_string(options.number_slots) + " slots" : "") +
                                " leave " + std::to_string(learned) +
                                " of the vocabulary of " + std::to_string(options.vocab) +
                                " for the learned pieces; at least 300 are needed (specials and 256 byte pieces)");
  std::vector<std::string> chunks = chunk_documents(texts, size_t(options.max_sentences));
  if (chunks.empty()) throw InputError::field("tokenizer", "no training text (every source is empty)");

  std::string controls;
  for (const std::string& s : chat_control_symbols()) controls += (controls.empty() ? "" : ",") + s;
  std::unordered_map<std::string, std::string> args = {
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(learned)},
      {"hard_vocab_limit", "false"},
      {"byte_fallback", "true"},
      {"control_symbols", controls},
      {"character_coverage", "0.9995"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"split_digits", options.split_digits ? "true" : "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      {"shuffle_input_sentence", "false"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
  };
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  ChunkIterator it(std::move(chunks));
  std::string proto;
  sentencepiece::util::Status st = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  if (!st.ok()) throw InputError::field("tokenizer", std::string("SentencePiece training failed: ") + st.ToString());
  return from_serialized(append_user_defined_pieces(std::move(proto), numbers), "trained tokenizer");
}

Tokenizer Tokenizer::from_serialized(const std::string& model_proto, const std::string& name) {
  Tokenizer t;
  sentencepiece::util::Status st = t.sp_->LoadFromSerializedProto(model_proto);
  if (!st.ok()) throw InputError(name, 0, std::string("not a SentencePiece model: ") + st.ToString());
  t.proto_ = model_proto;
  // The chat template relies on these ids; a model trained elsewhere may not have them.
  const std::vector<std::string>& controls = chat_control_symbols();
  for (size_t i = 0; i < controls.size(); ++i)
    if (t.sp_->PieceToId(controls[i]) != int(3 + i) || !t.sp_->IsControl(int(3 + i)))
      throw InputError(name, 0, "not a trex tokenizer: control symbol " + controls[i] + " is not id " +
                                    std::to_string(3 + i));
  if (t.sp_->bos_id() != 1 || t.sp_->eos_id() != 2 || t.sp_->unk_id() != 0)
    throw InputError(name, 0, "not a trex tokenizer: unk, bos, eos must be ids 0, 1, 2");
  if (t.sp_->PieceToId("<0x00>") != 7 || !t.sp_->IsByte(7))
    throw InputError(name, 0, "not a trex tokenizer: no byte fallback pieces");
  // A model with add_dummy_prefix or remove_extra_whitespaces on (SentencePiece's defaults;
  // trex trains with both off) drops the space of a leading "\u2581" piece in every decode
  // call: streaming (serve/text_stream.h) decodes a piece at a time, so every streamed word would
  // lose its space. Seen from the outside: such a piece decoded alone has no leading space.
  // A model with no such piece cannot lose one.
  const std::string_view kSpace = "\u2581";
  for (int id = 0; id < t.sp_->GetPieceSize(); ++id) {
    if (t.sp_->IsControl(id) || t.sp_->IsByte(id) || t.sp_->IsUnknown(id) || t.sp_->IsUnused(id)) continue;
    const std::string& piece = t.sp_->IdToPiece(id);
    if (piece.compare(0, kSpace.size(), kSpace) != 0) continue;
    std::string spaced;  // the piece with each "\u2581" as the space it stands for
    for (size_t at = 0; at < piece.size();) {
      const bool space = piece.compare(at, kSpace.size(), kSpace) == 0;
      spaced += space ? std::string(" ") : piece.substr(at, 1);
      at += space ? kSpace.size() : 1;
    }
    if (t.decode({int32_t(id)}) != spaced)
      throw InputError(name, 0, "not a trex tokenizer: trained with add_dummy_prefix or "
                                "remove_extra_whitespaces on (decoding drops a leading space); retrain "
                                "with both off");
    break;
  }
  // Whole-number pieces: USER_DEFINED pieces that are runs of 2 or more digits.
  std::vector<std::string> user;
  try {
    user = user_defined_pieces(model_proto);
  } catch (const std::runtime_error& e) {
    throw InputError(name, 0, e.what());
  }
  for (const std::string& p : user) {
    size_t length = 0;
    const int slot = slot_at(p, 0, &length);
    if (slot > 0 && length == p.size()) {
      if (slot != int(t.slot_ids_.size()) + 1)
        throw InputError(name, 0, "number slot pieces out of order: " + p + " after " +
                                      std::to_string(t.slot_ids_.size()) + " slots");
      t.slot_ids_.push_back(int32_t(t.sp_->PieceToId(p)));
      continue;
    }
    if (p.size() < 2 || p.find_first_not_of("0123456789") != std::string::npos) continue;
    t.numbers_.emplace(p, int32_t(t.sp_->PieceToId(p)));
  }
  if (!t.numbers_.empty()) {
    for (char d = '0'; d <= '9'; ++d) {
      std::vector<int32_t> ids;
      t.encode_plain(std::string_view(&d, 1), &ids);
      t.digit_ids_.push_back(std::move(ids));
    }
  }
  return t;
}

Tokenizer Tokenizer::load(const std::string& path) { return from_serialized(read_file(path, size_t(1) << 28), path); }

void Tokenizer::save(const std::string& path) const { write_file_atomic(path, proto_); }

void Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>* out) const {
  std::vector<int> ids;
  sentencepiece::util::Status st = sp_->Encode(text, &ids);
  if (!st.ok()) throw std::runtime_error("tokenizer: encode failed: " + st.ToString());
  out->insert(out->end(), ids.begin(), ids.end());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  if (slot_ids_.empty()) {
    encode_numbers(text, &out);
    return out;
  }
  // Each spelling of a slot 1..K is that slot's piece; the text between them as without slots.
  size_t from = 0;
  for (size_t i = text.find("<n_"); i != std::string_view::npos; i = text.find("<n_", i + 1)) {
    size_t length = 0;
    const int slot = slot_at(text, i, &length);
    if (slot < 1 || slot > number_slot_count()) continue;
    if (i > from) encode_numbers(text.substr(from, i - from), &out);
    out.push_back(slot_ids_[size_t(slot) - 1]);
    from = i + length;
    i = from - 1;
  }
  if (from < text.size()) encode_numbers(text.substr(from), &out);
  return out;
}

void Tokenizer::encode_numbers(std::string_view text, std::vector<int32_t>* result) const {
  std::vector<int32_t>& out = *result;
  if (numbers_.empty()) {
    encode_plain(text, &out);
    return;
  }
  // With digits split no learned piece holds a digit, so encoding the text between runs of
  // digits on its own gives the pieces SentencePiece gives it inside the whole text; the runs are
  // ours, so a run that is not a number piece is never cut into a shorter number piece + digits.
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string run;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && !digit(text[j])) ++j;
    if (j > i) encode_plain(text.substr(i, j - i), &out);
    size_t k = j;
    while (k < text.size() && digit(text[k])) ++k;
    if (k > j) {
      run.assign(text.substr(j, k - j));
      const auto it = numbers_.find(run);
      if (it != numbers_.end()) {
        out.push_back(it->second);
      } else {
        for (char d : run) out.insert(out.end(), digit_ids_[d - '0'].begin(), digit_ids_[d - '0'].end());
      }
    }
    i = k;
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> v(ids.begin(), ids.end());
  std::string out;
  sentencepiece::util::Status st = sp_->Decode(v, &out);
  if (!st.ok()) throw std::runtime_error("tokenizer: decode failed: " + st.ToString());
  return out;
}

std::string Tokenizer::piece(int32_t id) const { return sp_->IdToPiece(id); }

int Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }

bool Tokenizer::is_byte(int32_t id) const { return id >= 0 && id < vocab_size() && sp_->IsByte(id); }

}  // namespace trex::train
