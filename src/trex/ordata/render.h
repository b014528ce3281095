// Rendering a Story as a business-language problem statement.
//
// Six phrasing templates (a report with Markdown tables, a narrative with the data in
// sentences, a memo with bullet lists, an e-mail, a structured specification and a textbook
// exercise) and a concise variant of each. Every template states
// every table cell and fact, the rules, the integrality note and the objective with its
// direction; none of them states a solution. Output is normalized by clean_text().
#pragma once

#include <string>

#include "trex/ordata/story.h"

namespace trex::ordata {

inline constexpr int kNumTemplates = 6;
// "report", "narrative", "memo", "email", "spec", "exercise"
const char* template_name(int t);

// REQUIRES: 0 <= tmpl < kNumTemplates.
std::string render_statement(const Story& story, int tmpl, bool concise);

// The cleaner: trailing spaces removed, runs of spaces collapsed, at most one blank line in a
// row, one final newline, non-ASCII punctuation replaced by ASCII.
std::string clean_text(const std::string& text);

}  // namespace trex::ordata
