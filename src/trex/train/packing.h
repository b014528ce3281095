// Packing documents into fixed-size batches: `rows` rows of `seq` tokens, T = rows x seq.
//
// Rows are filled from the mixture's documents back to back, with no padding: a document that
// does not fit in what is left of a row is cut, its first piece ends the row and the rest
// continues in the next row (and batch); a document longer than seq is cut into as many
// pieces as needed. Every piece is its own DocSpan, so attention never crosses a piece, and no
// span crosses a row.
//
// Packing "whole" (SFT, where the answer must see its prompt): a document starts at a row's
// start or after whole documents in it, never cut across rows; when it does not fit in what is
// left of the row, the rest of the row is padding (one span of eos ids without targets) and the
// document starts the next row. A document longer than seq keeps its first seq tokens (the
// prompt and the start of the answer); the rest is dropped (truncated_documents counts them).
//
// Packing "first-fit" (SFT too): whole documents as above, but a row is filled first-fit from a
// lookahead of the next kLookahead documents of the mixture: the oldest one that fits in what is
// left of the row goes in, and padding ends the row only when none fits. Whole packing of
// 300-1150-token conversations into 2048-token rows left about a third of the tokens as padding;
// the lookahead fills most of it. The order changes only within the lookahead: the oldest
// document always fits an empty row, so none waits more than one row.
//
// Targets: position i of a piece holds document token p; its target is document token p + 1
// when that exists and counts for the loss (TokenizedDoc::loss), else -1. So the last token
// of a piece still predicts the first token of the next piece of its document, CPT counts
// every token after <s>, and SFT counts only assistant tokens.
//
// The data position (the mixture's position plus the piece of a document cut at the last
// batch's end) serializes to JSON; restoring it makes the next batches identical.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "trex/model/transformer.h"
#include "trex/train/dataset.h"
#include "trex/train/mixture.h"
#include "trex/train/tokenizer.h"

namespace trex::train {

struct DataPosition {
  MixturePosition mixture;
  bool pending = false;    // a document was cut at the end of the last batch
  DocumentRef pending_doc;
  int64_t pending_offset = 0;  // its next token
  int64_t documents = 0;   // documents started so far
  // Whole packing's counters so far, so a resumed run's final "packing whole:" line is all-time.
  int64_t truncated = 0, padding = 0;
  // First-fit packing's lookahead: documents drawn from the mixture, not yet placed, oldest first.
  std::vector<DocumentRef> lookahead;
  nlohmann::json to_json() const;
  static DataPosition from_json(const nlohmann::json& j, size_t sources, const std::string& field);
};

class Packer {
 public:
  enum class Mode { kCut, kWhole, kFirstFit };
  static constexpr size_t kLookahead = 16;
  // sources and tok must outlive the packer. REQUIRES: seq >= 2, rows >= 1.
  Packer(const std::vector<Source>* sources, const Tokenizer* tok, uint64_t seed, int64_t seq, int64_t rows,
         Mode mode = Mode::kCut);

  // The next batch: ids, targets and docs of rows x seq tokens.
  model::Batch next();

  DataPosition position() const;
  void restore(const DataPosition& pos);

  int64_t seq() const { return seq_; }
  int64_t rows() const { return rows_; }
  // Documents started, per source (for metrics: the realized mixture).
  const std::vector<int64_t>& documents_per_source() const { return per_source_; }
  // kWhole, kFirstFit: documents longer than seq whose tail was dropped, and padding tokens, so far.
  int64_t truncated_documents() const { return truncated_; }
  int64_t padding_tokens() const { return padding_; }

 private:
  const TokenizedDoc& document(const DocumentRef& ref);
  void pad(model::Batch& b, int64_t n);  // n padding tokens, their own span
  // n tokens of d from its first, their own span (targets as for any piece).
  void place(model::Batch& b, const TokenizedDoc& d, int64_t n);
  void fill_row_first_fit(model::Batch& b);

  const std::vector<Source>* sources_;
  const Tokenizer* tok_;
  int64_t seq_, rows_;
  Mode mode_;
  int64_t truncated_ = 0, padding_ = 0;
  Mixture mixture_;
  bool pending_ = false;
  DocumentRef pending_doc_;
  int64_t pending_offset_ = 0;
  int64_t documents_ = 0;
  std::vector<int64_t> per_source_;
  // kFirstFit: the lookahead, oldest first, each document tokenized once.
  std::vector<std::pair<DocumentRef, TokenizedDoc>> lookahead_;
  // The last tokenized document, so a document spanning several rows is tokenized once.
  DocumentRef cached_ref_{~size_t(0), ~size_t(0)};
  TokenizedDoc cached_;
};

}  // namespace trex::train
