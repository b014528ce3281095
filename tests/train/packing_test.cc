// Packing: spans cover every row without crossing it, targets are the next token of the same
// document (or -1), long documents are cut into pieces that still predict across the cut, SFT
// counts only assistant tokens, and a restored data position gives the same batches.
#include "trex/train/packing.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_text.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::license_texts;
using testing::TempDir;

const Tokenizer& tokenizer() {
  static const Tokenizer tok = [] {
    TokenizerOptions o;
    o.vocab = 512;
    return Tokenizer::train(license_texts(), o);
  }();
  return tok;
}

std::vector<Source> text_sources(const TempDir& dir) {
  // Documents of very different lengths: some shorter than a row, one much longer.
  dir.write("text/a.txt", "short one.\n");
  dir.write("text/b.txt", "another short document, a bit longer than the first.\n");
  dir.write("text/c.txt", license_texts()[0]);
  std::vector<Source> s;
  s.push_back(Source::load({"text", SourceKind::kText, dir.path("text"), 1.0}));
  return s;
}

TEST(PackingTest, SpansAndTargetsFollowDocuments) {
  TempDir dir("pack");
  std::vector<Source> sources = text_sources(dir);
  const Tokenizer& tok = tokenizer();
  const int64_t seq = 64, rows = 3;
  Packer packer(&sources, &tok, 7, seq, rows);
  int64_t counted = 0, total = 0;
  for (int batch = 0; batch < 30; ++batch) {
    model::Batch b = packer.next();
    ASSERT_EQ(b.tokens, seq * rows);
    ASSERT_EQ(b.ids.size(), size_t(b.tokens));
    ASSERT_EQ(b.targets.size(), size_t(b.tokens));
    int64_t pos = 0;
    for (const model::DocSpan& d : b.docs) {
      ASSERT_EQ(d.begin, pos);
      ASSERT_GE(d.len, 1);
      // No span crosses a row boundary.
      ASSERT_EQ(d.begin / seq, (d.begin + d.len - 1) / seq);
      // Within a span, the target of position i is the input at i + 1 (when counted).
      for (int64_t i = d.begin; i + 1 < d.begin + d.len; ++i)
        if (b.targets[size_t(i)] >= 0) {
          EXPECT_EQ(b.targets[size_t(i)], b.ids[size_t(i + 1)]);
        }
      pos += d.len;
    }
    ASSERT_EQ(pos, b.tokens);
    for (size_t i = 0; i < b.ids.size(); ++i) {
      ASSERT_GE(b.ids[i], 0);
      ASSERT_LT(b.ids[i], tok.vocab_size());
      // <s> is never a target; </s> is the target of a document's last token.
      EXPECT_NE(b.targets[i], tok.bos_id());
      counted += b.targets[i] >= 0;
      ++total;
    }
  }
  // CPT counts all but the last token of each document (and of its <s>): nearly everything.
  EXPECT_GT(double(counted) / double(total), 0.9);
}

TEST(PackingTest, LongDocumentIsCutIntoPiecesThatPredictAcrossTheCut) {
  TempDir dir("packlong");
  dir.write("long.txt", license_texts()[0]);
  std::vector<Source> sources;
  sources.push_back(Source::load({"long", SourceKind::kText, dir.path("long.txt"), 1.0}));
  const Tokenizer& tok = tokenizer();
  TokenizedDoc doc = sources[0].tokenize(0, tok);
  const int64_t seq = 50;
  ASSERT_GT(int64_t(doc.ids.size()), 3 * seq);
  Packer packer(&sources, &tok, 1, seq, 1);
  // The first rows are consecutive pieces of the one document; the last token of each piece
  // predicts the first of the next.
  for (int64_t r = 0; r < 3; ++r) {
    model::Batch b = packer.next();
    ASSERT_EQ(b.docs.size(), 1u);
    for (int64_t i = 0; i < seq; ++i) {
      EXPECT_EQ(b.ids[size_t(i)], doc.ids[size_t(r * seq + i)]);
      EXPECT_EQ(b.targets[size_t(i)], doc.ids[size_t(r * seq + i + 1)]);
    }
  }
}

TEST(PackingTest, SftCountsOnlyAssistantTokens) {
  TempDir dir("packsft");
  dir.write("sft.jsonl", testing::sft_jsonl(5));
  std::vector<Source> sources;
  sources.push_back(Source::load({"sft", SourceKind::kSft, dir.path("sft.jsonl"), 1.0}));
  const Tokenizer& tok = tokenizer();
  Packer packer(&sources, &tok, 3, 256, 2);
  model::Batch b = packer.next();
  const int32_t assistant = tok.role_id(Role::kAssistant), end = tok.end_id();
  // Walk each span: a target counts exactly when its token is in an assistant turn's content
  // or that turn's <|end|>.
  int64_t counted = 0;
  for (const model::DocSpan& d : b.docs) {
    if (b.ids[size_t(d.begin)] != tok.bos_id()) continue;  // a continued piece: its turn is unknown here
    int32_t role = -1;
    for (int64_t i = d.begin; i < d.begin + d.len; ++i) {
      int32_t id = b.ids[size_t(i)];
      if (id >= tok.role_id(Role::kSystem) && id <= assistant) role = id;
      if (i + 1 >= d.begin + d.len) break;
      int32_t next = b.ids[size_t(i + 1)];
      bool next_is_marker = next >= tok.role_id(Role::kSystem) && next <= assistant;
      bool next_in_assistant = role == assistant && !next_is_marker && next != tok.eos_id() &&
                               !(id == end);  // after <|end|> the turn is over
      if (b.targets[size_t(i)] >= 0) {
        ++counted;
        EXPECT_TRUE(next_in_assistant) << "position " << i << " predicts " << tok.piece(next);
        EXPECT_EQ(b.targets[size_t(i)], next);
      } else {
        EXPECT_FALSE(next_in_assistant) << "position " << i << " should predict " << tok.piece(next);
      }
    }
  }
  EXPECT_GT(counted, 0);
  // Both the user text and the system prompt are present and never counted.
  EXPECT_LT(counted, b.tokens / 2);
}

// Whole packing: every span starts a document (<s>) or is padding (</s> ids, no targets);
// documents follow the mixture's order uncut, except one longer than seq, which fills a row
// with its first seq tokens, the last of them still predicting the next document token.
TEST(PackingTest, WholePackingNeverCutsADocumentAcrossRows) {
  TempDir dir("packwhole");
  std::vector<Source> sources = text_sources(dir);
  const Tokenizer& tok = tokenizer();
  const int64_t seq = 64, rows = 3;
  std::vector<TokenizedDoc> docs;
  for (size_t i = 0; i < sources[0].size(); ++i) docs.push_back(sources[0].tokenize(i, tok));
  // The fixture's documents: two shorter than a row, one longer.
  ASSERT_LT(docs[0].ids.size() + docs[1].ids.size(), size_t(seq));
  ASSERT_GT(int64_t(docs[2].ids.size()), seq);
  Packer whole(&sources, &tok, 7, seq, rows, Packer::Mode::kWhole);
  int64_t padding = 0, truncated = 0, placed = 0;
  for (int batch = 0; batch < 20; ++batch) {
    model::Batch b = whole.next();
    ASSERT_EQ(b.ids.size(), size_t(seq * rows));
    ASSERT_EQ(b.targets.size(), size_t(seq * rows));
    int64_t pos = 0;
    for (const model::DocSpan& d : b.docs) {
      ASSERT_EQ(d.begin, pos);
      ASSERT_EQ(d.begin / seq, (d.begin + d.len - 1) / seq);
      pos += d.len;
      if (b.ids[size_t(d.begin)] == tok.eos_id()) {  // padding: to the row's end, never counted
        EXPECT_EQ((d.begin + d.len) % seq, 0);
        for (int64_t i = d.begin; i < d.begin + d.len; ++i) {
          EXPECT_EQ(b.ids[size_t(i)], tok.eos_id());
          EXPECT_EQ(b.targets[size_t(i)], -1);
        }
        padding += d.len;
        continue;
      }
      ASSERT_EQ(b.ids[size_t(d.begin)], tok.bos_id()) << "a span that does not start its document";
      const TokenizedDoc* doc = nullptr;
      for (const TokenizedDoc& t : docs)
        if (std::equal(b.ids.begin() + d.begin, b.ids.begin() + d.begin + d.len, t.ids.begin()) &&
            (int64_t(t.ids.size()) == d.len || (d.len == seq && int64_t(t.ids.size()) > seq)))
          doc = &t;
      ASSERT_NE(doc, nullptr) << "span at " << d.begin << " is not a whole document nor a long one's first row";
      if (int64_t(doc->ids.size()) > seq) {
        ++truncated;
        EXPECT_EQ(d.begin % seq, 0);
        EXPECT_EQ(b.targets[size_t(d.begin + seq - 1)], doc->ids[size_t(seq)]);
      }
      ++placed;
    }
    ASSERT_EQ(pos, seq * rows);
  }
  EXPECT_GT(padding, 0);
  EXPECT_GT(truncated, 0);
  EXPECT_EQ(whole.padding_tokens(), padding);
  EXPECT_EQ(whole.truncated_documents(), truncated);
  EXPECT_EQ(whole.position().documents, placed + (whole.position().pending ? 1 : 0));
}

TEST(PackingTest, RestoredPositionGivesTheSameBatches) {
  TempDir dir("packresume");
  std::vector<Source> sources = text_sources(dir);
  dir.write("sft.jsonl", testing::sft_jsonl(7));
  sources.push_back(Source::load({"sft", SourceKind::kSft, dir.path("sft.jsonl"), 2.0}));
  const Tokenizer& tok = tokenizer();
  Packer a(&sources, &tok, 11, 48, 2);
  for (int i = 0; i < 9; ++i) a.next();
  // Through JSON, as a checkpoint stores it.
  nlohmann::json saved = nlohmann::json::parse(a.position().to_json().dump());
  Packer b(&sources, &tok, 11, 48, 2);
  b.restore(DataPosition::from_json(saved, sources.size(), "data"));
  for (int i = 0; i < 20; ++i) {
    model::Batch x = a.next(), y = b.next();
    ASSERT_EQ(x.ids, y.ids) << "batch " << i;
    ASSERT_EQ(x.targets, y.targets);
    ASSERT_EQ(x.docs.size(), y.docs.size());
  }
  EXPECT_THROW(DataPosition::from_json(saved, sources.size() + 1, "data"), InputError);
}

// The same for whole packing (padding, truncated long documents), and its counters carry over,
// so a resumed run reports all-time totals.
TEST(PackingTest, RestoredWholePositionGivesTheSameBatchesAndCounters) {
  TempDir dir("packwholeresume");
  std::vector<Source> sources = text_sources(dir);
  dir.write("sft.jsonl", testing::sft_jsonl(7));
  sources.push_back(Source::load({"sft", SourceKind::kSft, dir.path("sft.jsonl"), 2.0}));
  const Tokenizer& tok = tokenizer();
  Packer a(&sources, &tok, 11, 64, 3, Packer::Mode::kWhole);
  for (int i = 0; i < 9; ++i) a.next();
  ASSERT_GT(a.padding_tokens(), 0);
  ASSERT_GT(a.truncated_documents(), 0);
  nlohmann::json saved = nlohmann::json::parse(a.position().to_json().dump());
  Packer b(&sources, &tok, 11, 64, 3, Packer::Mode::kWhole);
  b.restore(DataPosition::from_json(saved, sources.size(), "data"));
  EXPECT_EQ(b.padding_tokens(), a.padding_tokens());
  EXPECT_EQ(b.truncated_documents(), a.truncated_documents());
  for (int i = 0; i < 20; ++i) {
    model::Batch x = a.next(), y = b.next();
    ASSERT_EQ(x.ids, y.ids) << "batch " << i;
    ASSERT_EQ(x.targets, y.targets);
    ASSERT_EQ(x.docs.size(), y.docs.size());
  }
  EXPECT_EQ(b.padding_tokens(), a.padding_tokens());
  EXPECT_EQ(b.truncated_documents(), a.truncated_documents());
}

// First-fit packing: every span is a whole document (or a long one's first row) or padding to the
// row's end; each document drawn is placed once, in the mixture's order except within the
// lookahead; and on conversations of varied lengths it pads less than whole packing of the same
// mixture.
TEST(PackingTest, FirstFitPlacesWholeDocumentsAndPadsLessThanWhole) {
  TempDir dir("packfirstfit");
  std::vector<Source> sources = text_sources(dir);
  dir.write("sft.jsonl", testing::sft_jsonl(40));
  sources.push_back(Source::load({"sft", SourceKind::kSft, dir.path("sft.jsonl"), 3.0}));
  const Tokenizer& tok = tokenizer();
  const int64_t seq = 96, rows = 2;
  // The mixture's order of documents, as every packer with the same seed draws them.
  Mixture order(&sources, 5);
  std::vector<DocumentRef> drawn;
  for (int i = 0; i < 2000; ++i) drawn.push_back(order.next());
  Packer ff(&sources, &tok, 5, seq, rows, Packer::Mode::kFirstFit);
  Packer whole(&sources, &tok, 5, seq, rows, Packer::Mode::kWhole);
  std::vector<bool> used(drawn.size(), false);
  std::vector<size_t> placed;  // index in drawn of each placed document, in placement order
  int64_t padding = 0;
  for (int batch = 0; batch < 30; ++batch) {
    whole.next();
    model::Batch b = ff.next();
    ASSERT_EQ(b.ids.size(), size_t(seq * rows));
    int64_t pos = 0;
    for (const model::DocSpan& d : b.docs) {
      ASSERT_EQ(d.begin, pos);
      ASSERT_EQ(d.begin / seq, (d.begin + d.len - 1) / seq) << "a span crosses a row";
      pos += d.len;
      if (b.ids[size_t(d.begin)] == tok.eos_id()) {
        EXPECT_EQ((d.begin + d.len) % seq, 0) << "padding that does not end its row";
        for (int64_t i = d.begin; i < d.begin + d.len; ++i) EXPECT_EQ(b.targets[size_t(i)], -1);
        padding += d.len;
        continue;
      }
      ASSERT_EQ(b.ids[size_t(d.begin)], tok.bos_id()) << "a span that does not start its document";
      // Which drawn document it is: the first one not yet placed with these tokens (a source
      // reshuffles every epoch, so a document is drawn again later).
      bool found = false;
      for (size_t k = 0; k < drawn.size() && !found; ++k) {
        if (used[k]) continue;
        TokenizedDoc t = sources[drawn[k].source].tokenize(drawn[k].doc, tok);
        const int64_t len = std::min<int64_t>(int64_t(t.ids.size()), seq);
        if (len != d.len || !std::equal(b.ids.begin() + d.begin, b.ids.begin() + d.begin + d.len, t.ids.begin()))
          continue;
        for (int64_t i = 0; i < len; ++i) {
          const bool counted = i + 1 < int64_t(t.ids.size()) && t.loss[size_t(i + 1)];
          ASSERT_EQ(b.targets[size_t(d.begin + i)], counted ? t.ids[size_t(i + 1)] : -1);
        }
        used[k] = true;
        placed.push_back(k);
        found = true;
      }
      ASSERT_TRUE(found) << "span at " << d.begin << " is not a whole document of the mixture";
    }
    ASSERT_EQ(pos, seq * rows);
  }
  ASSERT_GT(placed.size(), 40u);
  // Reordering stays within the lookahead: when the i-th document is placed, at most
  // i + lookahead documents have been drawn.
  for (size_t i = 0; i < placed.size(); ++i) EXPECT_LT(placed[i], i + Packer::kLookahead) << "document " << i;
  EXPECT_EQ(ff.padding_tokens(), padding);
  EXPECT_EQ(ff.position().documents, int64_t(placed.size()));
  EXPECT_GT(whole.padding_tokens(), 0);
  EXPECT_LT(ff.padding_tokens(), whole.padding_tokens());
}

// A restored first-fit position (with its lookahead) gives the same batches and counters.
TEST(PackingTest, RestoredFirstFitPositionGivesTheSameBatches) {
  TempDir dir("packffresume");
  std::vector<Source> sources = text_sources(dir);
  dir.write("sft.jsonl", testing::sft_jsonl(7));
  sources.push_back(Source::load({"sft", SourceKind::kSft, dir.path("sft.jsonl"), 2.0}));
  const Tokenizer& tok = tokenizer();
  Packer a(&sources, &tok, 11, 64, 3, Packer::Mode::kFirstFit);
  for (int i = 0; i < 9; ++i) a.next();
  ASSERT_FALSE(a.position().lookahead.empty());
  nlohmann::json saved = nlohmann::json::parse(a.position().to_json().dump());
  Packer b(&sources, &tok, 11, 64, 3, Packer::Mode::kFirstFit);
  b.restore(DataPosition::from_json(saved, sources.size(), "data"));
  EXPECT_EQ(b.padding_tokens(), a.padding_tokens());
  for (int i = 0; i < 20; ++i) {
    model::Batch x = a.next(), y = b.next();
    ASSERT_EQ(x.ids, y.ids) << "batch " << i;
    ASSERT_EQ(x.targets, y.targets);
    ASSERT_EQ(x.docs.size(), y.docs.size());
  }
  EXPECT_EQ(b.padding_tokens(), a.padding_tokens());
  EXPECT_EQ(b.truncated_documents(), a.truncated_documents());
  EXPECT_EQ(b.position().documents, a.position().documents);
  // A lookahead naming a source the run does not have is refused.
  saved["lookahead"][0][0] = sources.size();
  EXPECT_THROW(DataPosition::from_json(saved, sources.size(), "data"), InputError);
}

}  // namespace
}  // namespace trex::train
