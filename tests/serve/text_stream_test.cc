// The streamed text of generated tokens: pieces that, joined, are exactly what decoding the
// whole sequence gives (the stream decodes each token once, incrementally), on random token
// sequences with multibyte characters, byte runs cut anywhere (incomplete and invalid UTF-8),
// control ids and unknowns; and stop strings, against an oracle that decodes every prefix of
// the sequence whole; with number slots, stop strings matched on the text with the slots filled.
#include "trex/serve/text_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace trex::serve {
namespace {

const train::Tokenizer& tokenizer() {
  static const train::Tokenizer tok = [] {
    // Multibyte characters common enough to become pieces of their own ("é", "€", "日本"),
    // so sequences mix learned multibyte pieces with byte pieces.
    std::vector<std::string> texts;
    for (int i = 0; i < 300; ++i)
      texts.push_back("le café coûte " + std::to_string(i) + " € à Zürich, naïve über 日本語のテキスト " +
                      std::to_string(i * 7) + " → fin\n");
    train::TokenizerOptions o;
    o.vocab = 400;
    return train::Tokenizer::train(texts, o);
  }();
  return tok;
}

const PieceTexts& texts() {
  static const PieceTexts t(tokenizer());
  return t;
}

int32_t byte_id(const train::Tokenizer& tok, unsigned b) {
  static const char* hex = "0123456789ABCDEF";
  const std::string piece = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    if (tok.is_byte(id) && tok.piece(id) == piece) return id;
  ADD_FAILURE() << "no byte piece " << piece;
  return 0;
}

// A random token sequence of one of three kinds: ids drawn from the whole vocabulary; the
// encoding of random text with characters the tokenizer has pieces for and characters it
// spells in bytes; byte runs (whole characters, characters cut short, stray continuation and
// invalid bytes) between learned pieces, control ids and <unk>.
std::vector<int32_t> random_sequence(std::mt19937& rng) {
  const train::Tokenizer& tok = tokenizer();
  const int kind = int(rng() % 3);
  const int n = 1 + int(rng() % 60);
  std::vector<int32_t> ids;
  if (kind == 0) {
    for (int i = 0; i < n; ++i) ids.push_back(int32_t(rng() % uint32_t(tok.vocab_size())));
  } else if (kind == 1) {
    static const std::vector<std::string> chars = {"a", "e", " ", "\n", "café", "€", "日本", "語", "é", "ü",
                                                   "→", "😀", "Ω", "ж", "𝔘", "ﬀ", "\t", "0", "7", "  "};
    std::string s;
    for (int i = 0; i < n; ++i) s += chars[rng() % chars.size()];
    ids = tok.encode(s);
  } else {
    static const std::vector<std::string> encoded = {"€", "😀", "ж", "𝔘", "é", "語"};
    for (int i = 0; i < n; ++i) {
      const int r = int(rng() % 10);
      if (r < 4) {  // a character's bytes, sometimes cut short
        const std::string& c = encoded[rng() % encoded.size()];
        const size_t len = rng() % 3 == 0 ? 1 + rng() % c.size() : c.size();
        for (size_t k = 0; k < len; ++k) ids.push_back(byte_id(tok, static_cast<unsigned char>(c[k])));
      } else if (r < 6) {  // any byte: stray continuations, invalid leads, ASCII
        ids.push_back(byte_id(tok, unsigned(rng() % 256)));
      } else if (r < 9) {  // a learned piece
        ids.push_back(int32_t(263 + rng() % uint32_t(tok.vocab_size() - 263)));
      } else {  // <unk>, bos, eos or a chat control id
        ids.push_back(int32_t(rng() % 7));
      }
    }
  }
  return ids;
}

std::string decode_prefix(const std::vector<int32_t>& ids, size_t t) {
  return tokenizer().decode(std::vector<int32_t>(ids.begin(), ids.begin() + t));
}

TEST(TextStream, PiecesJoinToTheWholeSequencesDecoding) {
  const train::Tokenizer& tok = tokenizer();
  ASSERT_EQ(tok.piece(7), "<0x00>");  // the sequences above assume the byte pieces are ids 7..262
  std::mt19937 rng(16);
  int with_bytes = 0, incomplete_at_end = 0;
  for (int seq = 0; seq < 1000; ++seq) {
    const std::vector<int32_t> ids = random_sequence(rng);
    TextStream ts(texts(), {});
    std::string joined;
    for (size_t t = 1; t <= ids.size(); ++t) {
      joined += ts.push(ids[t - 1]);
      const std::string whole = decode_prefix(ids, t);
      ASSERT_EQ(whole.compare(0, joined.size(), joined), 0) << "sequence " << seq << ", token " << t;
      // Nothing is held back after a piece that is not a byte: the stream keeps up.
      if (!tok.is_byte(ids[t - 1])) {
        ASSERT_EQ(joined, whole) << "sequence " << seq << ", token " << t;
      }
      with_bytes += tok.is_byte(ids[t - 1]);
    }
    const std::string whole = tok.decode(ids);
    incomplete_at_end += joined.size() < whole.size();
    joined += ts.flush();
    ASSERT_EQ(joined, whole) << "sequence " << seq;
    EXPECT_EQ(ts.text(), whole);
    EXPECT_FALSE(ts.stopped());
  }
  // The sequences did exercise byte runs, and some ended inside a character.
  EXPECT_GT(with_bytes, 3000);
  EXPECT_GT(incomplete_at_end, 15);
}

TEST(TextStream, ACharacterCutShortAtTheEndDecodesAsTheWholeSequenceDoes) {
  const train::Tokenizer& tok = tokenizer();
  const std::vector<int32_t> ids = {byte_id(tok, 'a'), byte_id(tok, 0xE2), byte_id(tok, 0x82)};
  TextStream ts(texts(), {});
  std::string joined;
  for (int32_t id : ids) joined += ts.push(id);
  EXPECT_EQ(joined, "a");  // the euro sign's first two bytes wait for the third
  joined += ts.flush();
  EXPECT_EQ(joined, tok.decode(ids));
  EXPECT_EQ(joined, "a\xEF\xBF\xBD\xEF\xBF\xBD");  // each byte of the unfinished character: U+FFFD
}

// Stop strings: the stream stops at the first token after which a stop string appears in the
// text that can no longer change (the prefix every longer prefix of the sequence decodes to),
// and its text ends before the earliest such appearance. The oracle decodes each prefix whole.
std::string oracle(const std::vector<int32_t>& ids, const std::vector<std::string>& stop, bool* stopped) {
  std::vector<std::string> whole;
  for (size_t t = 0; t <= ids.size(); ++t) whole.push_back(decode_prefix(ids, t));
  for (size_t t = 1; t <= ids.size(); ++t) {
    size_t stable = whole[t].size();
    for (size_t u = t + 1; u <= ids.size(); ++u) {
      size_t k = 0;
      while (k < stable && k < whole[u].size() && whole[u][k] == whole[t][k]) ++k;
      stable = k;
    }
    const std::string text = whole[t].substr(0, stable);
    size_t cut = std::string::npos;
    for (const std::string& s : stop) cut = std::min(cut, text.find(s));
    if (cut != std::string::npos) {
      *stopped = true;
      return text.substr(0, cut);
    }
  }
  *stopped = false;
  return whole.back();
}

TEST(TextStream, StopStringsEndTheTextAsDecodingEveryPrefixWholeDoes) {
  const train::Tokenizer& tok = tokenizer();
  static const std::string kReplacement = "\xEF\xBF\xBD";
  std::mt19937 rng(1616);
  int stops = 0;
  for (int seq = 0; seq < 600; ++seq) {
    const std::vector<int32_t> ids = random_sequence(rng);
    const std::string whole = tok.decode(ids);
    // Stop strings cut from the text (whole characters, never a replacement character, whose
    // bytes may yet become another character), and one that never appears.
    std::vector<std::string> stop = {"\x01never"};
    for (int k = int(rng() % 4); k > 0 && !whole.empty(); --k) {
      size_t a = rng() % whole.size();
      while (a > 0 && (static_cast<unsigned char>(whole[a]) & 0xC0) == 0x80) --a;
      size_t b = std::min(whole.size(), a + 1 + rng() % 8);
      while (b < whole.size() && (static_cast<unsigned char>(whole[b]) & 0xC0) == 0x80) ++b;
      const std::string s = whole.substr(a, b - a);
      if (s.find(kReplacement) == std::string::npos) stop.push_back(s);
    }
    bool want_stopped = false;
    const std::string want = oracle(ids, stop, &want_stopped);
    TextStream ts(texts(), stop);
    std::string joined;
    for (int32_t id : ids) {
      if (ts.stopped()) {
        EXPECT_EQ(ts.push(id), "");  // nothing after the stop
        continue;
      }
      joined += ts.push(id);
    }
    joined += ts.flush();
    ASSERT_EQ(ts.stopped(), want_stopped) << "sequence " << seq;
    ASSERT_EQ(joined, want) << "sequence " << seq;
    EXPECT_EQ(ts.text(), want);
    stops += want_stopped;
  }
  EXPECT_GT(stops, 200);
}

TEST(TextStream, TheStartOfAStopStringIsHeldBackUntilContradicted) {
  const train::Tokenizer& tok = tokenizer();
  TextStream ts(texts(), {"ab!"});
  std::string joined;
  for (char c : std::string("xa")) joined += ts.push(byte_id(tok, static_cast<unsigned char>(c)));
  EXPECT_EQ(joined, "x");  // "a" may start "ab!"
  joined += ts.push(byte_id(tok, 'b'));
  EXPECT_EQ(joined, "x");
  joined += ts.push(byte_id(tok, 'c'));  // "abc": not the stop string
  EXPECT_EQ(joined, "xabc");
  for (char c : std::string("ab!z")) joined += ts.push(byte_id(tok, static_cast<unsigned char>(c)));
  EXPECT_TRUE(ts.stopped());
  EXPECT_EQ(joined + ts.flush(), "xabc");
}

// Number slots: the slots are filled with the request's numbers before stop strings are looked
// for (review rslots MEDIUM 1), whether a slot comes as its one piece or spelled in bytes; a
// spelling not yet complete is held back, and given back as text at the end when it never
// completes; a slot with no number throws.
const train::Tokenizer& slot_tokenizer() {
  static const train::Tokenizer tok = [] {
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i) texts.push_back("minimize cost " + std::to_string(i) + " of the plant\n");
    train::TokenizerOptions o;
    o.vocab = 400;
    o.number_slots = 4;
    return train::Tokenizer::train(texts, o);
  }();
  return tok;
}

std::vector<int32_t> spelled_in_bytes(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(byte_id(slot_tokenizer(), static_cast<unsigned char>(c)));
  return ids;
}

// The text of `ids` streamed with these numbers and stop strings, and whether it stopped.
std::string stream_slots(const std::vector<int32_t>& ids, const std::vector<std::string>& stop,
                         bool* stopped = nullptr) {
  static const PieceTexts pieces(slot_tokenizer());
  TextStream ts(pieces, stop, std::vector<std::string>{"12", "7.5"});
  std::string joined;
  for (int32_t id : ids) joined += ts.push(id);
  joined += ts.flush();
  EXPECT_EQ(ts.text(), joined);
  if (stopped) *stopped = ts.stopped();
  return joined;
}

TEST(TextStream, SlotsAreFilledBeforeStopStringsAreLookedFor) {
  const train::Tokenizer& tok = slot_tokenizer();
  const std::vector<int32_t> ids = tok.encode("cost <n_1> and <n_2> of <n_1>");
  ASSERT_EQ(std::count(ids.begin(), ids.end(), tok.encode("<n_1>").at(0)), 2);
  bool stopped = false;
  EXPECT_EQ(stream_slots(ids, {}, &stopped), "cost 12 and 7.5 of 12");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(stream_slots(ids, {"7.5"}, &stopped), "cost 12 and ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(stream_slots(ids, {"12 and"}, &stopped), "cost ");
  EXPECT_TRUE(stopped);
  // A slot's spelling is never the text, so it never matches.
  EXPECT_EQ(stream_slots(ids, {"<n_2>", "<n_"}, &stopped), "cost 12 and 7.5 of 12");
  EXPECT_FALSE(stopped);
  // Spelled in bytes, the same; the spelling is held back until it is complete.
  std::vector<int32_t> spelled = tok.encode("x ");
  for (int32_t id : spelled_in_bytes("<n_2>!")) spelled.push_back(id);
  EXPECT_EQ(stream_slots(spelled, {}), "x 7.5!");
  EXPECT_EQ(stream_slots(spelled, {".5!"}, &stopped), "x 7");
  EXPECT_TRUE(stopped);
  static const PieceTexts pieces(tok);
  {
    TextStream ts(pieces, {}, std::vector<std::string>{"12", "7.5"});
    std::string joined;
    for (int32_t id : tok.encode("x ")) joined += ts.push(id);
    for (int32_t id : spelled_in_bytes("<n_2")) joined += ts.push(id);
    EXPECT_EQ(joined, "x ");
    EXPECT_EQ(ts.push(byte_id(tok, '>')), "7.5");
  }
  // A spelling that never completes is text at the end, and a stop string may match it there.
  EXPECT_EQ(stream_slots(spelled_in_bytes("a<n_"), {}), "a<n_");
  EXPECT_EQ(stream_slots(spelled_in_bytes("a<n_"), {"<n"}, &stopped), "a");
  EXPECT_TRUE(stopped);
  // A slot past the numbers: as a piece, or spelled.
  for (const std::vector<int32_t>& bad : {tok.encode("a <n_3>"), spelled_in_bytes("a <n_4> b")}) {
    TextStream ts(pieces, {}, std::vector<std::string>{"12", "7.5"});
    EXPECT_THROW(
        {
          for (int32_t id : bad) ts.push(id);
          ts.flush();
        },
        train::NumberSlotError);
  }
  // A stop string before it ends the text first: no error.
  EXPECT_EQ(stream_slots(tok.encode("a <n_1> <n_3>"), {"12"}, &stopped), "a ");
  EXPECT_TRUE(stopped);
}

}  // namespace
}  // namespace trex::serve
