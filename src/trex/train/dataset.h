// Training data sources: where documents come from, read once into memory at start.
//
// Kinds (the `kind` of a [[data]] entry in a train config, docs/train.md):
//   text  plain text files: one file is one document. `path` is a file, a directory (every
//         regular file below it, recursively) or a glob ("/usr/share/doc/*/copyright").
//         Files holding a NUL byte are not text and are skipped (counted in skipped_files).
//   cpt   JSONL lines {"text": "..."}: the CPT view `trex data gen` writes. `path` is a file, a
//         directory of .jsonl files, or a `trex data` output directory (its cpt/ is read).
//   sft   JSONL lines {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}]}:
//         OpenAI chat format, the SFT view of `trex data` (its sft/ is read from an output
//         directory). Each conversation needs at least one assistant message.
// Files are read in sorted path order, lines in file order, so document i of a source is the
// same on every run. A malformed line is an InputError naming FILE:LINE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/train/chat_template.h"
#include "trex/train/tokenizer.h"

namespace trex::train {

enum class SourceKind { kText, kCpt, kSft };
const char* to_string(SourceKind k);

struct SourceSpec {
  std::string name;    // for metrics and errors; defaults to "data[i]"
  SourceKind kind = SourceKind::kText;
  std::string path;
  double weight = 1;   // relative share of documents drawn from this source
  // sft only: count every token but <s> (a CPT run reading conversations as text), not just
  // the assistant's.
  bool count_all = false;
  // Prefix of error fields, e.g. "tokenizer.data[0] (licenses)": names repeat between [[data]]
  // and [[tokenizer.data]], so the section and index say which table is meant. Empty: name.
  std::string field = "";
  std::string where() const { return field.empty() ? name : field; }
};

class Source {
 public:
  // Reads every document. Throws InputError naming the file (and line) for unreadable or
  // malformed input, or the source (field "data[i].path") when it holds no document.
  static Source load(const SourceSpec& spec);

  const SourceSpec& spec() const { return spec_; }
  size_t size() const;
  int skipped_files() const { return skipped_files_; }
  int64_t bytes() const { return bytes_; }

  // Document i as plain text (an SFT conversation: its contents, one per line), for training
  // the tokenizer.
  std::string text(size_t i) const;
  // Document i tokenized: CPT kinds with render_text, SFT with render_chat (count_all: every
  // token after <s> counted).
  TokenizedDoc tokenize(size_t i, const Tokenizer& tok) const;

 private:
  SourceSpec spec_;
  std::vector<std::string> texts_;                     // text, cpt
  std::vector<std::vector<ChatMessage>> chats_;        // sft
  int skipped_files_ = 0;
  int64_t bytes_ = 0;
};

// The files a source reads, sorted (exposed for tests and docs).
std::vector<std::string> source_files(const SourceSpec& spec);

}  // namespace trex::train
