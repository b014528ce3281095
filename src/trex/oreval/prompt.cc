// Prompt templates and similarity-based few-shot choice.
#include "trex/oreval/prompt.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

#ifndef TREX_EVAL_CONFIG_DIR
#define TREX_EVAL_CONFIG_DIR ""
#endif

namespace trex::oreval {

std::string eval_config_dir() {
  if (const char* env = std::getenv("TREX_EVAL_CONFIG_DIR"); env && *env) return env;
  if (std::filesystem::is_directory(TREX_EVAL_CONFIG_DIR)) return TREX_EVAL_CONFIG_DIR;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::is_directory(exe.parent_path() / "../configs/eval"))
    return std::filesystem::canonical(exe.parent_path() / "../configs/eval").string();
  throw InputError("the prompt templates were not found (set TREX_EVAL_CONFIG_DIR to trex's configs/eval)");
}

PromptTemplate load_template(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception&) {
    throw InputError(path, 0, "cannot read the prompt template");
  }
  PromptTemplate t;
  t.file = path;
  std::string* into = nullptr;
  size_t pos = 0;
  long line = 0;
  bool any_user = false;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (l.rfind("### ", 0) == 0) {
      std::string section = l.substr(4);
      while (!section.empty() && std::isspace((unsigned char)section.back())) section.pop_back();
      if (section == "system") into = &t.system;
      else if (section == "user") {
        into = &t.user;
        any_user = true;
      } else
        throw InputError(path, line, "unknown section '" + section + "' (expected system or user)");
      continue;
    }
    if (into) *into += l + "\n";
    if (nl == text.size()) break;
  }
  if (!any_user) throw InputError(path, 0, "no '### user' section");
  auto trim = [](std::string& s) {
    while (!s.empty() && std::isspace((unsigned char)s.back())) s.pop_back();
    size_t b = 0;
    while (b < s.size() && s[b] == '\n') ++b;
    s.erase(0, b);
  };
  trim(t.system);
  trim(t.user);
  // Check the placeholders once, here, so a bad template fails before any request.
  std::map<std::string, std::string> known = {{"question", ""}, {"examples", ""}, {"data_note", ""}};
  render(text, known, path);
  return t;
}

std::string render(const std::string& text, const std::map<std::string, std::string>& vars, const std::string& file) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 2, close - open - 2);
    auto it = vars.find(name);
    if (it == vars.end()) {
      long line = 1 + long(std::count(text.begin(), text.begin() + long(open), '\n'));
      throw InputError(file, line, "unknown placeholder {{" + name + "}} (question, examples, data_note)");
    }
    out.append(text, pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

namespace {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s) {
    if (std::isalnum((unsigned char)c)) {
      cur += char(std::tolower((unsigned char)c));
    } else if (!cur.empty()) {
      w.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

std::string same_problem_key(const Item& it) {
  std::string ref;
  if (!it.reference_lp.empty()) {
    try {
      ref = read_file(it.reference_lp);
      // Gurobi's header names the model; the body is what matters.
      size_t body = ref.find("\nM");
      if (body != std::string::npos) ref = ref.substr(body);
    } catch (const std::exception&) {
      ref.clear();
    }
  }
  if (ref.empty()) ref = it.reference_code;
  if (ref.empty()) return "";
  char num[32];
  std::snprintf(num, sizeof num, "%d:%.17g|", int(it.answer.kind), it.answer.value);
  return num + ref;
}

}  // namespace

SimilarityIndex::SimilarityIndex(const std::vector<Item>& items) : items_(items) {
  const size_t m = items.size();
  std::vector<std::unordered_map<std::string, double>> tf(m);
  std::unordered_map<std::string, double> df;
  for (size_t i = 0; i < m; ++i) {
    for (const auto& w : words(items[i].question)) tf[i][w] += 1;
    for (const auto& [w, c] : tf[i]) df[w] += 1;
  }
  vectors_.resize(m);
  for (size_t i = 0; i < m; ++i) {
    double norm = 0;
    for (const auto& [w, c] : tf[i]) {
      double x = c * std::log((1.0 + double(m)) / (1.0 + df[w]));
      vectors_[i].push_back({w, x});
      norm += x * x;
    }
    norm = std::sqrt(norm);
    for (auto& [w, x] : vectors_[i]) x = norm > 0 ? x / norm : 0;
    std::sort(vectors_[i].begin(), vectors_[i].end());
    same_problem_.push_back(same_problem_key(items[i]));
  }
}

std::vector<size_t> SimilarityIndex::most_similar(size_t self, int n) const {
  std::vector<std::pair<double, size_t>> scored;
  const auto& target = vectors_[self];
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i == self || items_[i].id == items_[self].id || items_[i].question == items_[self].question) continue;
    if (!same_problem_[self].empty() && same_problem_[i] == same_problem_[self]) continue;
    double dot = 0;
    size_t a = 0, b = 0;
    const auto& v = vectors_[i];
    while (a < target.size() && b < v.size()) {
      if (target[a].first == v[b].first) dot += target[a++].second * v[b++].second;
      else if (target[a].first < v[b].first) ++a;
      else ++b;
    }
    scored.push_back({dot, i});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<size_t> out;
  for (size_t k = 0; k < scored.size() && int(out.size()) < n; ++k) out.push_back(scored[k].second);
  return out;
}

std::string format_example(const Item& item) {
  std::string s = "Question:\n" + item.question + "\n";
  if (!item.reference_code.empty()) s += "\nSolution:\n```python\n" + item.reference_code + "\n```\n";
  char buf[64];
  if (item.answer.kind == AnswerKind::kNumber) {
    std::snprintf(buf, sizeof buf, "%.12g", item.answer.value);
    s += std::string("\nOptimal value: ") + buf + "\n";
  } else if (item.answer.kind != AnswerKind::kNone) {
    s += std::string("\nOptimal value: ") + to_string(item.answer.kind) + "\n";
  }
  return s;
}

}  // namespace trex::oreval
