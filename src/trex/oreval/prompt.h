// Prompt templates (files in configs/eval/) and few-shot example choice.
//
// A template file has a "### system" section and a "### user" section; text outside them
// is a comment. Placeholders are {{question}}, {{examples}} (few-shot, possibly empty) and
// {{data_note}} (how a Bench4Opt program finds its instance). An unknown placeholder is an
// error naming the file and line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trex/oreval/benchmark.h"

namespace trex::oreval {

struct PromptTemplate {
  std::string file;
  std::string system;
  std::string user;
};

// The folder of the shipped templates: $TREX_EVAL_CONFIG_DIR, else the source tree's
// configs/eval compiled in, else ../configs/eval beside the trex binary.
std::string eval_config_dir();

// Throws InputError naming the file and line.
PromptTemplate load_template(const std::string& path);

// Replaces {{name}} by vars[name]; throws InputError(file, line) for a name not in vars.
std::string render(const std::string& text, const std::map<std::string, std::string>& vars, const std::string& file);

// Few-shot choice: the items most similar to a given one (cosine of TF-IDF word vectors of
// the questions), best first, ties by position. Never the item itself, nor an item that is
// the same problem in other words (same answer and same reference LP text or program).
class SimilarityIndex {
 public:
  explicit SimilarityIndex(const std::vector<Item>& items);
  std::vector<size_t> most_similar(size_t self, int n) const;

 private:
  const std::vector<Item>& items_;
  std::vector<std::vector<std::pair<std::string, double>>> vectors_;  // sorted by word, unit length
  std::vector<std::string> same_problem_;
};

// An example as shown in a few-shot prompt: the question, the reference program when there
// is one, and the answer.
std::string format_example(const Item& item);

}  // namespace trex::oreval
