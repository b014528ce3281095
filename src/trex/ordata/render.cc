#include "trex/ordata/render.h"

#include <stdexcept>

#include "trex/ordata/family_util.h"

namespace trex::ordata {

namespace {

std::string markdown_table(const Table& t) {
  std::string s = "| " + t.row_header;
  for (const auto& c : t.columns) s += " | " + c;
  s += " |\n|";
  for (size_t i = 0; i <= t.columns.size(); ++i) s += "---|";
  s += "\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    s += "| " + t.rows[r];
    for (const auto& c : t.cells[r]) s += " | " + c;
    s += " |\n";
  }
  return s;
}

// "dining chair: profit ($ per unit) 45, lumber (board feet per unit) 3."
std::string row_sentence(const Table& t, size_t r, const char* sep) {
  std::string s = cap(t.rows[r]) + ": ";
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) s += sep;
    std::string col = t.columns[c];
    if (!col.empty()) col[0] = char(std::tolower(static_cast<unsigned char>(col[0])));
    s += col + " " + t.cells[r][c];
  }
  return s + ".";
}

std::string compact_table(const Table& t) {
  std::string s = cap(t.caption) + " (" + t.row_header + ": ";
  for (size_t c = 0; c < t.columns.size(); ++c) s += (c ? "; " : "") + t.columns[c];
  s += "): ";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    s += (r ? "; " : "") + t.rows[r] + " ";
    for (size_t c = 0; c < t.cells[r].size(); ++c) s += (c ? "/" : "") + t.cells[r][c];
  }
  return s + ".";
}

std::string report(const Story& st, bool concise) {
  std::string s = st.setting + "\n\n";
  s += "The task is to decide " + st.decision + ".\n\n";
  for (const Table& t : st.tables) {
    if (concise) {
      s += compact_table(t) + "\n";
    } else {
      s += cap(t.caption) + ":\n\n" + markdown_table(t) + "\n";
    }
  }
  for (const auto& f : st.facts) s += f + "\n";
  s += "\nConstraints:\n";
  for (const auto& r : st.rules) s += "- " + r + "\n";
  if (!st.integrality.empty()) s += "- " + st.integrality + "\n";
  s += "\nObjective: " + st.objective + ".\n";
  return s;
}

std::string narrative(const Story& st, bool concise) {
  std::string s = st.setting + " ";
  for (const auto& f : st.facts) s += f + " ";
  s += "\n\n";
  for (const Table& t : st.tables) {
    if (concise) {
      s += compact_table(t) + "\n";
      continue;
    }
    s += cap(t.caption) + ". ";
    for (size_t r = 0; r < t.rows.size(); ++r) s += row_sentence(t, r, ", ") + " ";
    s += "\n\n";
  }
  for (const auto& r : st.rules) s += r + " ";
  if (!st.integrality.empty()) s += st.integrality;
  s += "\n\nDetermine " + st.decision + " so as to " + st.objective + ".\n";
  return s;
}

std::string memo(const Story& st, bool concise) {
  std::string s = "To: the planning team at " + st.company + " (" + st.industry + ")\n";
  s += "Goal: " + st.objective + ".\n\n";
  if (!concise) s += "Background: " + st.setting + "\n\n";
  s += "Data:\n";
  for (const Table& t : st.tables) {
    if (concise) {
      s += "- " + compact_table(t) + "\n";
      continue;
    }
    s += "- " + cap(t.caption) + ":\n";
    for (size_t r = 0; r < t.rows.size(); ++r) s += "  - " + row_sentence(t, r, "; ") + "\n";
  }
  for (const auto& f : st.facts) s += "- " + f + "\n";
  s += "\nRequirements:\n";
  int k = 1;
  for (const auto& r : st.rules) s += std::to_string(k++) + ". " + r + "\n";
  if (!st.integrality.empty()) s += std::to_string(k++) + ". " + st.integrality + "\n";
  s += "\nPlease decide " + st.decision + ".\n";
  return s;
}

std::string email(const Story& st, bool concise) {
  std::string s = "Subject: planning question from " + st.company + "\n\nHello,\n\n" + st.setting + "\n\n";
  for (const auto& f : st.facts) s += f + " ";
  s += "\n\n";
  for (const Table& t : st.tables) s += (concise ? compact_table(t) : cap(t.caption) + ":\n\n" + markdown_table(t)) + "\n";
  s += "Please keep in mind: ";
  for (const auto& r : st.rules) s += r + " ";
  if (!st.integrality.empty()) s += st.integrality;
  s += "\n\nCould you work out " + st.decision + "? We want to " + st.objective + ".\n\nThanks,\nthe operations desk\n";
  return s;
}

std::string spec(const Story& st, bool concise) {
  std::string s = "## " + st.company + " (" + st.industry + ")\n\n";
  s += "**Context.** " + st.setting + "\n\n**Decisions.** Decide " + st.decision + ".\n\n**Data.**\n\n";
  for (const Table& t : st.tables) s += (concise ? compact_table(t) : markdown_table(t)) + "\n";
  for (const auto& f : st.facts) s += "* " + f + "\n";
  s += "\n**Constraints.**\n\n";
  for (const auto& r : st.rules) s += "* " + r + "\n";
  if (!st.integrality.empty()) s += "* " + st.integrality + "\n";
  s += "\n**Objective.** " + cap(st.objective) + ".\n";
  return s;
}

std::string exercise(const Story& st, bool concise) {
  std::string s = st.company + ", a company in " + st.industry + ", faces a planning problem. " + st.setting + "\n\n";
  for (const Table& t : st.tables) {
    if (concise) {
      s += compact_table(t) + "\n";
      continue;
    }
    s += cap(t.caption) + ": ";
    for (size_t r = 0; r < t.rows.size(); ++r) s += row_sentence(t, r, "; ") + " ";
    s += "\n\n";
  }
  for (const auto& f : st.facts) s += f + " ";
  s += "\n\nThe following conditions apply. ";
  for (const auto& r : st.rules) s += r + " ";
  if (!st.integrality.empty()) s += st.integrality;
  s += "\n\nFormulate a model that decides " + st.decision + " in order to " + st.objective + ".\n";
  return s;
}

}  // namespace

const char* template_name(int t) {
  static const char* names[kNumTemplates] = {"report", "narrative", "memo", "email", "spec", "exercise"};
  return t >= 0 && t < kNumTemplates ? names[t] : "?";
}

std::string render_statement(const Story& story, int tmpl, bool concise) {
  switch (tmpl) {
    case 0: return clean_text(report(story, concise));
    case 1: return clean_text(narrative(story, concise));
    case 2: return clean_text(memo(story, concise));
    case 3: return clean_text(email(story, concise));
    case 4: return clean_text(spec(story, concise));
    case 5: return clean_text(exercise(story, concise));
  }
  throw std::logic_error("render_statement: no template " + std::to_string(tmpl));
}

std::string clean_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool line_start = true;  // indentation at the start of a line is kept (nested lists)
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '\t') ch = ' ';
    if (ch == ' ' && !line_start && out.back() == ' ') continue;
    line_start = ch == '\n' || (line_start && ch == ' ');
    if (ch == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      // At most one blank line.
      if (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') continue;
      if (out.empty()) continue;
    }
    out += ch;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out + "\n";
}

}  // namespace trex::ordata
