// Formulation extraction; the rules are in extract.h.
#include "trex/oreval/extract.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace trex::oreval {

const char* to_string(CodeKind k) {
  switch (k) {
    case CodeKind::kNone: return "none";
    case CodeKind::kPython: return "python";
    case CodeKind::kLp: return "lp";
    case CodeKind::kMps: return "mps";
  }
  return "?";
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

bool has_line_starting(const std::string& text_lower, const std::vector<std::string>& words) {
  size_t pos = 0;
  while (pos < text_lower.size()) {
    size_t end = text_lower.find('\n', pos);
    if (end == std::string::npos) end = text_lower.size();
    size_t b = pos;
    while (b < end && (text_lower[b] == ' ' || text_lower[b] == '\t')) ++b;
    for (const auto& w : words)
      if (text_lower.compare(b, w.size(), w) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// What an unlabelled block holds.
CodeKind classify(const std::string& code) {
  std::string l = lower(code);
  if (has_line_starting(l, {"rows"}) && has_line_starting(l, {"columns"})) return CodeKind::kMps;
  if (has_line_starting(l, {"maximize", "minimize", "maximise", "minimise", "max", "min"}) &&
      has_line_starting(l, {"subject to", "such that", "st", "s.t."}))
    return CodeKind::kLp;
  if (l.find("import ") != std::string::npos || l.find("def ") != std::string::npos ||
      l.find("print(") != std::string::npos || l.find(".addvar") != std::string::npos)
    return CodeKind::kPython;
  return CodeKind::kNone;
}

CodeKind kind_of_label(const std::string& label, const std::string& code) {
  std::string l = lower(label);
  if (l == "python" || l == "py" || l == "python3" || l == "gurobipy") return CodeKind::kPython;
  if (l == "lp" || l == "cplex" || l == "cplex-lp") return CodeKind::kLp;
  if (l == "mps") return CodeKind::kMps;
  return classify(code);
}

struct Candidate {
  size_t end;  // position just after the block, for "last"
  Extraction e;
};

void fenced_blocks(const std::string& t, std::vector<Candidate>& out) {
  size_t pos = 0;
  while (true) {
    size_t open = t.find("```", pos);
    if (open == std::string::npos) return;
    size_t label_end = t.find('\n', open + 3);
    if (label_end == std::string::npos) return;
    std::string label = t.substr(open + 3, label_end - open - 3);
    while (!label.empty() && std::isspace((unsigned char)label.back())) label.pop_back();
    while (!label.empty() && std::isspace((unsigned char)label.front())) label.erase(0, 1);
    size_t close = t.find("```", label_end + 1);
    if (close == std::string::npos) return;  // unterminated: not complete
    std::string code = t.substr(label_end + 1, close - label_end - 1);
    CodeKind k = kind_of_label(label, code);
    if (k != CodeKind::kNone) out.push_back({close + 3, {k, code}});
    pos = close + 3;
  }
}

void python_tags(const std::string& t, std::vector<Candidate>& out) {
  size_t pos = 0;
  while (true) {
    size_t open = t.find("<python>", pos);
    if (open == std::string::npos) return;
    size_t close = t.find("</python>", open + 8);
    if (close == std::string::npos) return;
    std::string code = t.substr(open + 8, close - open - 8);
    // A fenced block inside the tags is the code; the fence lines are not Python.
    std::vector<Candidate> inner;
    fenced_blocks(code, inner);
    if (!inner.empty()) code = inner.back().e.code;
    out.push_back({close + 9, {CodeKind::kPython, code}});
    pos = close + 9;
  }
}

Extraction bare(const std::string& t) {
  std::string l = lower(t);
  static const std::regex lp_start(R"((^|\n)[ \t]*(maximize|minimize|maximise|minimise)[ \t]*(\r?\n))");
  static const std::regex lp_end(R"(\n[ \t]*end[ \t]*(\r?\n|$))");
  std::smatch s;
  if (std::regex_search(l, s, lp_start)) {
    size_t b = size_t(s.position(0)) + (s[1].length() > 0 ? 1 : 0);
    std::string rest = l.substr(b);
    std::smatch e;
    if (std::regex_search(rest, e, lp_end)) {
      size_t len = size_t(e.position(0) + e.length(0));
      std::string code = t.substr(b, len);
      if (classify(code) == CodeKind::kLp) return {CodeKind::kLp, code};
    }
  }
  for (const char* marker : {"from gurobipy import", "import gurobipy"}) {
    size_t p = t.find(marker);
    if (p != std::string::npos) {
      size_t line_start = t.rfind('\n', p);
      return {CodeKind::kPython, t.substr(line_start == std::string::npos ? 0 : line_start + 1)};
    }
  }
  return {};
}

}  // namespace

Extraction extract_formulation(const std::string& completion) {
  std::vector<Candidate> c;
  fenced_blocks(completion, c);
  python_tags(completion, c);
  if (c.empty()) return bare(completion);
  auto last = std::max_element(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.end < b.end; });
  return last->e;
}

}  // namespace trex::oreval
