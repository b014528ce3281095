#include "trex/ordata/statement_data.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>

#include "trex/ordata/checks.h"
#include "trex/ordata/family_util.h"
#include "trex/ordata/render.h"

namespace trex::ordata {

namespace {

// Markers around a marked cell or fact: open, the source's index, mid, the text, close. Control
// characters no template writes and clean_text() keeps.
constexpr char kOpen = '\x01', kMid = '\x02', kClose = '\x03';

bool statement_data_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A cell that is one number as num() prints it ("45", "3.5"); "unlimited", "-" are not data.
bool whole_number(const std::string& s, double* v) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// The numbers of a fact sentence, in order, as the reviewer reads a statement (stated_numbers()).
std::vector<std::string> fact_numbers(const std::string& s) {
  std::vector<std::string> out;
  for (const NumberSpan& n : number_spans(s))
    if (!n.list_marker) out.push_back(s.substr(n.begin, n.end - n.begin));
  return out;
}

// Lower-case words of a text or a model name, without the words that say nothing of a role.
std::set<std::string> words(const std::string& s) {
  static const std::set<std::string> stop = {"the", "a", "an", "of", "per", "in", "at", "to", "for", "on", "and",
                                             "or", "is", "are", "be", "by", "with", "each", "every", "may", "must",
                                             "can", "it", "its", "this", "that", "from", "as", "no", "not", "than"};
  std::set<std::string> out;
  std::string w;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && statement_data_alnum(s[i])) {
      w += char(std::tolower(static_cast<unsigned char>(s[i])));
      continue;
    }
    if (!w.empty() && !stop.count(w) && !std::isdigit(static_cast<unsigned char>(w[0]))) out.insert(w);
    w.clear();
  }
  return out;
}

size_t shared(const std::set<std::string>& a, const std::set<std::string>& b) {
  size_t n = 0;
  for (const std::string& w : a) n += b.count(w);
  return n;
}

// "Dining chair" -> "dining_chair", "hours[m1]" -> "hours_m1": key() made a Python identifier.
std::string ident(const std::string& s) {
  std::string out = key(s);
  if (out.empty()) return "value";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "n" + out;
  return out;
}

// A name's group: the part before '[' ("hours[m1]" -> "hours").
std::string group(const std::string& name) { return name.substr(0, name.find('[')); }

// "Carpentry time (hours per unit)" -> "Carpentry time".
std::string short_column(const std::string& column) {
  size_t p = column.find(" (");
  return p == std::string::npos ? column : column.substr(0, p);
}

// A model entry a datum can stand for.
struct Entry {
  enum Kind { kCost, kLower, kUpper, kCoef, kRowLower, kRowUpper } kind = kCost;
  int row = -1, var = -1;
  size_t term = 0;
  double value = 0;  // absolute
  std::set<std::string> words;  // of its row's and variable's names
  std::string name, group_name;  // what a fact's number filling it is called
};

std::vector<Entry> entries(const lp::Model& m) {
  std::vector<Entry> out;
  const std::string objective = m.objective_name.empty() ? "objective" : m.objective_name;
  auto nameable = [](double v) { return std::isfinite(v) && v != 0 && std::fabs(v) != 1; };
  auto add = [&](Entry::Kind kind, int r_index, int v_index, size_t term, double v, const std::string& row,
                 const std::string& var, const std::string& prefix, const std::string& suffix) {
    if (!nameable(v)) return;
    Entry e;
    e.kind = kind, e.row = r_index, e.var = v_index, e.term = term;
    e.value = std::fabs(v);
    e.words = words(row + " " + var + " " + prefix);
    std::string r = row.empty() ? "" : ident(row), rg = row.empty() ? "" : ident(group(row));
    std::string x = var.empty() ? "" : ident(var), xg = var.empty() ? "" : ident(group(var));
    auto joined = [&](const std::string& a, const std::string& b) {
      std::string s = prefix.empty() ? "" : ident(prefix);
      for (const std::string* p : {&a, &b})
        if (!p->empty()) s += (s.empty() ? "" : "_") + *p;
      // A row already named for its sense ("max_iron_oxide") takes no second "_max".
      const std::string word = suffix.empty() ? "" : suffix.substr(1);
      if (!word.empty() && (s.rfind(word + "_", 0) == 0 || (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix)))
        return s;
      return s + suffix;
    };
    e.name = joined(r, x);
    e.group_name = joined(rg, xg);
    out.push_back(std::move(e));
  };
  for (int j = 0; j < m.num_vars(); ++j) {
    const lp::Variable& v = m.var(j);
    add(Entry::kCost, -1, j, 0, v.cost, "", v.name, objective, "");
    add(Entry::kLower, -1, j, 0, v.lower, "", v.name, "", "_min");
    add(Entry::kUpper, -1, j, 0, v.upper, "", v.name, "", "_max");
  }
  const std::vector<std::string> labels = m.row_labels();
  for (int r = 0; r < m.num_rows(); ++r) {
    const lp::Constraint& c = m.row(r);
    const std::string& label = labels[size_t(r)];
    for (size_t t = 0; t < c.terms.size(); ++t)
      add(Entry::kCoef, r, c.terms[t].var, t, c.terms[t].coef, label, m.var(c.terms[t].var).name, "", "");
    switch (c.sense()) {
      case lp::RowSense::kLessEqual: add(Entry::kRowUpper, r, -1, 0, c.upper, label, "", "", "_max"); break;
      case lp::RowSense::kGreaterEqual: add(Entry::kRowLower, r, -1, 0, c.lower, label, "", "", "_min"); break;
      case lp::RowSense::kEqual: add(Entry::kRowLower, r, -1, 0, c.lower, label, "", "", "_rhs"); break;
      case lp::RowSense::kRanged:
        add(Entry::kRowLower, r, -1, 0, c.lower, label, "", "", "_min");
        add(Entry::kRowUpper, r, -1, 0, c.upper, label, "", "", "_max");
        break;
      case lp::RowSense::kFree: break;
    }
  }
  return out;
}

// Python's keywords and the names the program itself uses.
std::set<std::string> taken_names(const lp::Model& m) {
  std::set<std::string> t = {"m",      "gp",    "GRB",   "v",     "var",    "False", "None",   "True",
                             "and",    "as",    "assert", "async", "await", "break", "class",  "continue",
                             "def",    "del",   "elif",  "else",  "except", "finally", "for", "from",
                             "global", "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
                             "or",     "pass",  "raise", "return", "try",   "while",  "with",  "yield",
                             "print",  "abs",   "sum",   "range", "len",    "min",    "max",   "int",  "float"};
  for (const lp::Variable& v : m.vars()) t.insert(group(v.name));
  return t;
}

}  // namespace

ProgramData statement_data(const Story& story, int tmpl, bool concise, const lp::Model& model,
                           const std::string& statement) {
  // Sources: a numeric table cell (its row and column words) or a fact (its sentence).
  struct Source {
    int table = -1, row = -1, col = -1, fact = -1;
  };
  std::vector<Source> sources;
  Story marked = story;
  auto mark = [&](std::string& text, Source src) {
    text = kOpen + std::to_string(sources.size()) + kMid + text + kClose;
    sources.push_back(src);
  };
  for (size_t t = 0; t < marked.tables.size(); ++t)
    for (size_t r = 0; r < marked.tables[t].cells.size(); ++r)
      for (size_t c = 0; c < marked.tables[t].cells[r].size(); ++c) {
        double v;
        if (whole_number(marked.tables[t].cells[r][c], &v)) mark(marked.tables[t].cells[r][c], {int(t), int(r), int(c)});
      }
  for (size_t k = 0; k < marked.facts.size(); ++k) mark(marked.facts[k], {-1, -1, -1, int(k)});

  // The marked statement, read back in order: the plain text must be the statement itself.
  const std::string text = render_statement(marked, tmpl, concise);
  std::string plain;
  plain.reserve(text.size());
  struct Span {
    size_t source;
    std::string text;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != kOpen) {
      plain += text[i];
      continue;
    }
    size_t mid = text.find(kMid, i), close = text.find(kClose, i);
    if (mid == std::string::npos || close == std::string::npos || close < mid)
      throw std::logic_error("statement_data: a marker was cut by the template");
    spans.push_back({size_t(std::stoul(text.substr(i + 1, mid - i - 1))), text.substr(mid + 1, close - mid - 1)});
    plain += spans.back().text;
    i = close;
  }
  if (plain != statement) throw std::logic_error("statement_data: the marked rendering differs from the statement");

  const std::vector<Entry> all = entries(model);
  ProgramData out;
  std::vector<std::set<std::string>> data_words;
  std::set<std::string> used = taken_names(model);
  auto add_datum = [&](std::string name, const std::string& number, std::set<std::string> w) {
    Datum d;
    whole_number(number, &d.value);
    d.text = number;
    if (used.count(name)) {
      std::string base = name;
      for (int k = 2; used.count(name); ++k) name = base + "_" + std::to_string(k);
    }
    used.insert(name);
    d.name = name;
    for (const std::string& x : words(name)) w.insert(x);
    out.data.push_back(std::move(d));
    data_words.push_back(std::move(w));
  };
  for (const Span& sp : spans) {
    const Source& src = sources[sp.source];
    if (src.fact < 0) {
      const Table& t = story.tables[size_t(src.table)];
      const std::string& row = t.rows[size_t(src.row)];
      const std::string& col = t.columns[size_t(src.col)];
      std::set<std::string> w = words(row + " " + col);
      add_datum(ident(row) + "_" + ident(short_column(col)), sp.text, std::move(w));
      continue;
    }
    // A fact's number: named by the entry it fills whose names the sentence shares most.
    const std::set<std::string> fw = words(sp.text);
    for (const std::string& number : fact_numbers(sp.text)) {
      double v;
      whole_number(number, &v);
      std::vector<const Entry*> best;
      size_t best_score = 0;
      for (const Entry& e : all) {
        if (e.value != v) continue;
        size_t score = shared(e.words, fw);
        if (best.empty() || score > best_score) best = {&e}, best_score = score;
        else if (score == best_score) best.push_back(&e);
      }
      std::string name;
      if (best.empty()) {
        // Filling nothing the model holds as a number (a derived or implied use): its own words.
        std::string w;
        int n = 0;
        for (const std::string& x : words(sp.text))
          if (n++ < 3) w += (w.empty() ? "" : "_") + x;
        name = ident(w);
      } else {
        // One number for several entries of a group (every machine's hours): the group's name.
        name = best.front()->name;
        bool one_group = best.size() > 1;
        for (const Entry* e : best) one_group = one_group && e->group_name == best.front()->group_name;
        if (one_group) name = best.front()->group_name;
      }
      add_datum(name, number, fw);
    }
  }

  // Each entry takes the datum of its value whose words share most with the entry's.
  out.cost.assign(size_t(model.num_vars()), "");
  out.lower = out.upper = out.cost;
  out.coef.resize(size_t(model.num_rows()));
  for (int r = 0; r < model.num_rows(); ++r) out.coef[size_t(r)].assign(model.row(r).terms.size(), "");
  out.row_lower.assign(size_t(model.num_rows()), "");
  out.row_upper = out.row_lower;
  for (const Entry& e : all) {
    int pick = -1;
    size_t pick_score = 0;
    for (size_t d = 0; d < out.data.size(); ++d) {
      if (out.data[d].value != e.value) continue;
      size_t score = shared(e.words, data_words[d]);
      if (pick < 0 || score > pick_score) pick = int(d), pick_score = score;
    }
    if (pick < 0) continue;
    const std::string& name = out.data[size_t(pick)].name;
    switch (e.kind) {
      case Entry::kCost: out.cost[size_t(e.var)] = name; break;
      case Entry::kLower: out.lower[size_t(e.var)] = name; break;
      case Entry::kUpper: out.upper[size_t(e.var)] = name; break;
      case Entry::kCoef: out.coef[size_t(e.row)][e.term] = name; break;
      case Entry::kRowLower: out.row_lower[size_t(e.row)] = name; break;
      case Entry::kRowUpper: out.row_upper[size_t(e.row)] = name; break;
    }
  }
  return out;
}

}  // namespace trex::ordata
