// Reader for the CPLEX LP format and the dialect Gurobi writes (contract in lp_format.h).
//
// The text is scanned once by a pull lexer with a small look-ahead window, so memory stays
// flat however long a line is. Section keywords count only as the first token of a line
// (and not when followed by ':', which makes them a label), as in CPLEX.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include "trex/lp/lp_format.h"
#include "trex/util/error.h"

namespace trex::lp {

namespace {

constexpr size_t kMaxNameLength = 255;
// Bounds and right-hand sides at or beyond this magnitude mean "no bound", as in CPLEX.
constexpr double kInfinityThreshold = 1e30;
constexpr const char* kGurobiConstantName = "Constant";

enum class Tok { kEnd, kNumber, kName, kPlus, kMinus, kTimes, kPower, kSlash, kOpen, kClose,
                 kColon, kLe, kGe, kEq, kArrow };

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;
  double value = 0;
  long line = 0;
  bool line_start = false;  // first token on its line
};

bool is_name_start(unsigned char c) {
  if (std::isalpha(c) || c >= 0x80) return true;
  return std::strchr("_!\"#$%&(),;?@{}|~'`", c) != nullptr && c != 0;
}

bool is_name_char(unsigned char c) {
  return is_name_start(c) || std::isdigit(c) || c == '.' || c == '/';
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file, ReadLimit limit)
      : s_(text), file_(file), limit_(limit) {}

  const Token& peek(size_t k = 0) {
    while (buffer_.size() <= k) buffer_.push_back(scan());
    return buffer_[k];
  }
  Token next() {
    peek();
    Token t = buffer_.front();
    buffer_.pop_front();
    ++consumed_;
    return t;
  }
  // Tokens consumed so far: a parse step that consumes none would loop forever.
  long consumed() const { return consumed_; }
  [[noreturn]] void fail(long line, const std::string& message) const {
    throw InputError(file_, line, message);
  }
  long line() const { return line_; }

 private:
  void skip_space_and_comments() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') {
        ++line_;
        at_line_start_ = true;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '\\') {
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '*') {
          // Block comment \* ... *\, which may span lines.
          long start_line = line_;
          size_t end = s_.find("*\\", pos_ + 2);
          if (end == std::string_view::npos) fail(start_line, "unterminated \\* comment");
          line_ += std::count(s_.begin() + long(pos_), s_.begin() + long(end), '\n');
          pos_ = end + 2;
        } else {
          size_t end = s_.find('\n', pos_);
          pos_ = end == std::string_view::npos ? s_.size() : end;
        }
      } else {
        return;
      }
    }
  }

  Token scan() {
    limit_.step(file_);
    skip_space_and_comments();
    Token t;
    t.line = line_;
    t.line_start = at_line_start_;
    at_line_start_ = false;
    if (pos_ >= s_.size()) {
      t.kind = Tok::kEnd;
      return t;
    }
    size_t start = pos_;
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    auto single = [&](Tok kind) {
      ++pos_;
      t.kind = kind;
      t.text = s_.substr(start, 1);
      return t;
    };
    auto pair_if = [&](char second, Tok two, Tok one) {
      if (pos_ + 1 < s_.size() && s_[pos_ + 1] == second) {
        pos_ += 2;
        t.kind = two;
        t.text = s_.substr(start, 2);
        return t;
      }
      return single(one);
    };
    if (std::isdigit(c) || (c == '.' && pos_ + 1 < s_.size() && std::isdigit(
                                            static_cast<unsigned char>(s_[pos_ + 1])))) {
      return scan_number(t);
    }
    if (is_name_start(c)) return scan_name(t);
    switch (c) {
      case '+': return single(Tok::kPlus);
      case '-': return pair_if('>', Tok::kArrow, Tok::kMinus);
      case '*': return single(Tok::kTimes);
      case '^': return single(Tok::kPower);
      case '/': return single(Tok::kSlash);
      case '[': return single(Tok::kOpen);
      case ']': return single(Tok::kClose);
      case ':': return single(Tok::kColon);
      case '<': return pair_if('=', Tok::kLe, Tok::kLe);
      case '>': return pair_if('=', Tok::kGe, Tok::kGe);
      case '=':
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '<') return pair_if('<', Tok::kLe, Tok::kLe);
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') return pair_if('>', Tok::kGe, Tok::kGe);
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '=') return pair_if('=', Tok::kEq, Tok::kEq);
        return single(Tok::kEq);
      default: break;
    }
    if (c < 0x20 || c == 0x7f)
      fail(line_, "binary data (byte 0x" + hex(c) + "): not an LP file");
    fail(line_, std::string("unexpected character '") + char(c) + "'");
  }

  static std::string hex(unsigned char c) {
    const char* d = "0123456789abcdef";
    return {d[c >> 4], d[c & 15]};
  }

  Token scan_number(Token& t) {
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
        pos_ = k;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      }
    }
    t.kind = Tok::kNumber;
    t.text = s_.substr(start, pos_ - start);
    if (t.text.size() > 400) fail(line_, "number literal too long");
    std::string copy(t.text);
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) fail(line_, "malformed number '" + copy + "'");
    if (errno == ERANGE && std::isinf(v)) fail(line_, "number out of range '" + copy + "'");
    t.value = v;  // underflow to 0 or a subnormal is harmless and kept
    return t;
  }

  Token scan_name(Token& t) {
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '[') {
        ++depth;
      } else if (c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (!is_name_char(c)) {
        break;
      }
      ++pos_;
      if (pos_ - start > kMaxNameLength)
        fail(line_, "name longer than " + std::to_string(kMaxNameLength) + " characters");
    }
    if (depth != 0) fail(line_, "unbalanced '[' in name '" + std::string(s_.substr(start, pos_ - start)) + "'");
    t.kind = Tok::kName;
    t.text = s_.substr(start, pos_ - start);
    return t;
  }

  std::string_view s_;
  const std::string& file_;
  ReadLimit limit_;
  size_t pos_ = 0;
  long line_ = 1;
  bool at_line_start_ = true;
  long consumed_ = 0;
  std::deque<Token> buffer_;
};

enum class Section { kNone, kObjective, kConstraints, kBounds, kGenerals, kBinaries, kSemi, kSos, kEnd };

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(a[k])) != std::tolower(static_cast<unsigned char>(b[k])))
      return false;
  return true;
}

bool is_one_of(std::string_view word, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (iequals(word, o)) return true;
  return false;
}

// A linear expression with optional quadratic part, as parsed.
struct Expr {
  std::vector<Term> terms;
  std::vector<QuadTerm> quad;
  double constant = 0;
  bool empty() const { return terms.empty() && quad.empty() && constant == 0 && !has_constant; }
  bool has_constant = false;
};

class LpReader {
 public:
  LpReader(std::string_view text, const std::string& file, ReadLimit limit) : lex_(text, file, limit) {}

  Model read() {
    if (!lex_.peek().line_start || lex_.peek().kind == Tok::kEnd) lex_.fail(lex_.line(), "empty file: no objective section");
    Section section = Section::kNone;
    bool saw_objective = false;
    while (lex_.peek().kind != Tok::kEnd) {
      long line = lex_.peek().line;
      std::optional<Section> next = section_keyword();
      if (next) {
        if (*next == Section::kObjective) {
          if (saw_objective) lex_.fail(line, "second objective section");
          saw_objective = true;
        } else if (!saw_objective) {
          lex_.fail(line, "expected Minimize or Maximize before this section");
        }
        section = *next;
        if (section == Section::kEnd) break;
        continue;
      }
      long before = lex_.consumed();
      switch (section) {
        case Section::kNone:
          lex_.fail(lex_.peek().line, "expected Minimize or Maximize, found '" +
                                          std::string(lex_.peek().text) + "'");
        case Section::kObjective: read_objective(); break;
        case Section::kConstraints: read_constraint(); break;
        case Section::kBounds: read_bound(); break;
        case Section::kGenerals: read_integer(false); break;
        case Section::kBinaries: read_integer(true); break;
        case Section::kSemi: read_semicontinuous(); break;
        case Section::kSos: read_sos(); break;
        case Section::kEnd: break;
      }
      if (lex_.consumed() == before)
        lex_.fail(lex_.peek().line, "unexpected '" + std::string(lex_.peek().text) + "'");
    }
    if (!saw_objective) lex_.fail(lex_.line(), "empty file: no objective section");
    finish_bounds();
    model_.name_unnamed_rows();
    model_.normalize();
    return std::move(model_);
  }

 private:
  // Recognizes a section header at the current position and consumes it.
  std::optional<Section> section_keyword() {
    const Token& t = lex_.peek();
    if (!t.line_start || t.kind != Tok::kName) return std::nullopt;
    if (lex_.peek(1).kind == Tok::kColon) return std::nullopt;  // a label, not a header
    std::string_view w = t.text;
    long line = t.line;
    auto take = [&](int n, Section s) {
      for (int k = 0; k < n; ++k) lex_.next();
      return std::optional<Section>(s);
    };
    auto second_is = [&](std::initializer_list<const char*> words) {
      const Token& u = lex_.peek(1);
      return u.kind == Tok::kName && u.line == line && is_one_of(u.text, words);
    };
    if (is_one_of(w, {"minimize", "minimise", "minimum", "min"}) ||
        is_one_of(w, {"maximize", "maximise", "maximum", "max"})) {
      bool maximize = is_one_of(w, {"maximize", "maximise", "maximum", "max"});
      if (lex_.peek(1).kind == Tok::kMinus && lex_.peek(1).line == line)
        lex_.fail(line, "multi-objective sections are not supported");
      model_.sense = maximize ? Sense::kMaximize : Sense::kMinimize;
      return take(1, Section::kObjective);
    }
    if (iequals(w, "subject") && second_is({"to"})) return take(2, Section::kConstraints);
    if (iequals(w, "such") && second_is({"that"})) return take(2, Section::kConstraints);
    if (is_one_of(w, {"st", "s.t.", "st."})) return take(1, Section::kConstraints);
    if (iequals(w, "lazy") && second_is({"constraints"})) return take(2, Section::kConstraints);
    if (iequals(w, "user") && second_is({"cuts"})) return take(2, Section::kConstraints);
    if (is_one_of(w, {"bounds", "bound"})) return take(1, Section::kBounds);
    if (is_one_of(w, {"general", "generals", "gen"}) && second_is({"constraints", "constraint"}))
      lex_.fail(line, "general constraints are not supported");
    if (is_one_of(w, {"general", "generals", "gen", "integer", "integers"}))
      return take(1, Section::kGenerals);
    if (is_one_of(w, {"binary", "binaries", "bin"})) return take(1, Section::kBinaries);
    if (is_one_of(w, {"semi", "semis", "semi-continuous"})) {
      // The lexer splits "semi-continuous" at the '-'.
      if (iequals(w, "semi") && lex_.peek(1).kind == Tok::kMinus && lex_.peek(2).kind == Tok::kName &&
          lex_.peek(2).line == line && iequals(lex_.peek(2).text, "continuous"))
        return take(3, Section::kSemi);
      return take(1, Section::kSemi);
    }
    if (is_one_of(w, {"sos", "sos1", "sos2"})) {
      sos_header_type_ = iequals(w, "sos1") ? 1 : iequals(w, "sos2") ? 2 : 0;
      return take(1, Section::kSos);
    }
    if (is_one_of(w, {"pwlobj", "pwl"})) lex_.fail(line, "piecewise-linear objectives are not supported");
    if (iequals(w, "end")) return take(1, Section::kEnd);
    return std::nullopt;
  }

  bool at_section_or_end() {
    if (lex_.peek().kind == Tok::kEnd) return true;
    const Token& t = lex_.peek();
    if (!t.line_start || t.kind != Tok::kName || lex_.peek(1).kind == Tok::kColon) return false;
    std::string_view w = t.text;
    return is_one_of(w, {"minimize", "minimise", "minimum", "min", "maximize", "maximise", "maximum",
                         "max", "st", "s.t.", "st.", "bounds", "bound", "general", "generals", "gen",
                         "integer", "integers", "binary", "binaries", "bin", "semi", "semis",
                         "semi-continuous", "sos", "sos1", "sos2", "end", "pwlobj", "pwl"}) ||
           (iequals(w, "subject") && lex_.peek(1).kind == Tok::kName && iequals(lex_.peek(1).text, "to")) ||
           (iequals(w, "such") && lex_.peek(1).kind == Tok::kName && iequals(lex_.peek(1).text, "that")) ||
           (iequals(w, "lazy") && lex_.peek(1).kind == Tok::kName &&
            iequals(lex_.peek(1).text, "constraints")) ||
           (iequals(w, "user") && lex_.peek(1).kind == Tok::kName && iequals(lex_.peek(1).text, "cuts"));
  }

  bool is_infinity_word(const Token& t) {
    return t.kind == Tok::kName && is_one_of(t.text, {"inf", "infinity"});
  }

  int var(const Token& t) {
    if (is_infinity_word(t)) lex_.fail(t.line, "'" + std::string(t.text) + "' is not a variable here");
    return model_.var_index_or_add(std::string(t.text));
  }

  // Optional "name:" label.
  std::string label() {
    if (lex_.peek().kind == Tok::kName && lex_.peek(1).kind == Tok::kColon) {
      std::string name(lex_.next().text);
      lex_.next();
      return name;
    }
    return {};
  }

  bool ends_expression() {
    Tok k = lex_.peek().kind;
    if (k == Tok::kEnd || k == Tok::kLe || k == Tok::kGe || k == Tok::kEq || k == Tok::kArrow) return true;
    if (k == Tok::kName && lex_.peek(1).kind == Tok::kColon) return true;  // next row's label
    return at_section_or_end();
  }

  // sign := ('+' | '-')*; returns +1 or -1 and whether any sign was present.
  std::pair<double, bool> signs() {
    double s = 1;
    bool any = false;
    while (lex_.peek().kind == Tok::kPlus || lex_.peek().kind == Tok::kMinus) {
      if (lex_.next().kind == Tok::kMinus) s = -s;
      any = true;
    }
    return {s, any};
  }

  // Parses terms until a comparator, a label, a section header or the end.
  // `objective` allows "[ ... ] / 2".
  Expr expression(bool objective) {
    Expr e;
    bool first = true;
    while (!ends_expression()) {
      long line = lex_.peek().line;
      auto [sign, had_sign] = signs();
      if (!first && !had_sign) lex_.fail(line, "expected '+' or '-' before '" + std::string(lex_.peek().text) + "'");
      first = false;
      const Token& t = lex_.peek();
      if (t.kind == Tok::kOpen) {
        quadratic(e, sign, objective);
        continue;
      }
      double coef = sign;
      bool has_number = false;
      if (t.kind == Tok::kNumber) {
        coef *= lex_.next().value;
        has_number = true;
        if (lex_.peek().kind == Tok::kTimes) lex_.next();  // "3 * x" is accepted too
      }
      const Token& u = lex_.peek();
      if (u.kind == Tok::kName && !ends_expression()) {
        Token name = lex_.next();
        if (lex_.peek().kind == Tok::kPower || lex_.peek().kind == Tok::kTimes)
          lex_.fail(name.line, "quadratic terms must be written inside [ ]");
        if (objective && name.text == kGurobiConstantName) {
          // Gurobi writes the objective constant as a term on the name "Constant"
          // ("+ 10000 Constant") and reads it back as the constant; so does trex.
          e.constant += coef;
          e.has_constant = true;
          continue;
        }
        e.terms.push_back(Term{var(name), coef});
      } else if (has_number) {
        e.constant += coef;
        e.has_constant = true;
      } else {
        lex_.fail(u.line, u.kind == Tok::kEnd ? "unexpected end of file in expression"
                                              : "unexpected '" + std::string(u.text) + "' in expression");
      }
    }
    return e;
  }

  // '[' qterm (sign qterm)* ']' [ '/' number ]
  void quadratic(Expr& e, double outer_sign, bool objective) {
    long open_line = lex_.next().line;
    std::vector<QuadTerm> quad;
    bool first = true;
    while (lex_.peek().kind != Tok::kClose) {
      long line = lex_.peek().line;
      if (lex_.peek().kind == Tok::kEnd) lex_.fail(open_line, "'[' without matching ']'");
      auto [sign, had_sign] = signs();
      if (!first && !had_sign) lex_.fail(line, "expected '+' or '-' in quadratic term");
      first = false;
      double coef = sign;
      if (lex_.peek().kind == Tok::kNumber) coef *= lex_.next().value;
      Token a = lex_.next();
      if (a.kind != Tok::kName) lex_.fail(a.line, "expected a variable in quadratic term");
      int i = var(a);
      Token op = lex_.next();
      if (op.kind == Tok::kPower) {
        Token two = lex_.next();
        if (two.kind != Tok::kNumber || two.value != 2) lex_.fail(two.line, "only ^ 2 is allowed");
        quad.push_back(QuadTerm{i, i, coef});
      } else if (op.kind == Tok::kTimes) {
        Token b = lex_.next();
        if (b.kind != Tok::kName) lex_.fail(b.line, "expected a variable after '*'");
        quad.push_back(QuadTerm{i, var(b), coef});
      } else {
        lex_.fail(op.line, "expected '^ 2' or '* variable' in quadratic term");
      }
    }
    lex_.next();  // ']'
    double scale = outer_sign;
    if (lex_.peek().kind == Tok::kSlash) {
      lex_.next();
      Token d = lex_.next();
      if (d.kind != Tok::kNumber || d.value == 0) lex_.fail(d.line, "expected a nonzero number after '/'");
      scale /= d.value;
    }
    // CPLEX requires "/ 2" in the objective; a bracket without it means the terms as written.
    for (auto& q : quad) {
      q.coef *= scale;
      if (q.i > q.j) std::swap(q.i, q.j);
      e.quad.push_back(q);
    }
  }

  void read_objective() {
    std::string name = label();
    if (!name.empty()) model_.objective_name = name;
    Expr e = expression(true);
    if (ends_comparator()) lex_.fail(lex_.peek().line, "comparison in the objective");

    for (const auto& t : e.terms) model_.var(t.var).cost += t.coef;
    model_.objective_constant += e.constant;
    for (const auto& q : e.quad) model_.add_objective_quad(q.i, q.j, q.coef);
    if (lex_.peek().kind == Tok::kName && lex_.peek(1).kind == Tok::kColon && !at_section_or_end())
      lex_.fail(lex_.peek().line, "a second label in the objective (is 'Subject To' missing?)");
  }

  bool ends_comparator() {
    Tok k = lex_.peek().kind;
    return k == Tok::kLe || k == Tok::kGe || k == Tok::kEq;
  }

  Tok comparator() {
    Token t = lex_.next();
    if (t.kind == Tok::kArrow) lex_.fail(t.line, "indicator constraints are not supported");
    if (t.kind != Tok::kLe && t.kind != Tok::kGe && t.kind != Tok::kEq)
      lex_.fail(t.line, t.kind == Tok::kEnd ? "unexpected end of file: expected <=, >= or ="
                                            : "expected <=, >= or =, found '" + std::string(t.text) + "'");
    return t.kind;
  }

  // A right-hand side or bound value: signed number or [+-]inf[inity].
  double value(bool allow_infinity) {
    long line = lex_.peek().line;
    auto [sign, had_sign] = signs();
    Token t = lex_.next();
    double v;
    if (t.kind == Tok::kNumber) {
      v = sign * t.value;
    } else if (is_infinity_word(t)) {
      v = sign * kInf;
    } else {
      lex_.fail(t.line ? t.line : line, t.kind == Tok::kEnd ? "unexpected end of file: expected a number"
                                                             : "expected a number, found '" + std::string(t.text) + "'");
    }
    if (std::fabs(v) >= kInfinityThreshold) {
      if (!allow_infinity) lex_.fail(line, "infinite value not allowed here");
      v = v > 0 ? kInf : -kInf;
    }
    return v;
  }

  void read_constraint() {
    long line = lex_.peek().line;
    std::string name = label();
    if (!name.empty() && model_.find_row(name) >= 0) {
      // Gurobi models may repeat a row name and Gurobi writes them as they are (seen in
      // Bench4Opt: seven rows "Dependency_0_0"). No other part of an LP file refers to a row
      // by name, so nothing is ambiguous: later copies become "name#2", "name#3", ...
      std::string base = name;
      for (int k = 2; model_.find_row(name) >= 0; ++k) name = base + "#" + std::to_string(k);
    }
    Expr lhs = expression(false);
    if (lhs.empty() && !ends_comparator()) lex_.fail(lex_.peek().line, "expected a constraint");
    // Gurobi writes a row without terms as "R0: <= 10000": an empty left-hand side.
    bool empty_row = lhs.empty();
    Tok op = comparator();
    double lower, upper;
    std::vector<Term> terms;
    std::vector<QuadTerm> quad;
    if (!empty_row && lhs.terms.empty() && lhs.quad.empty()) {
      // "l <= expr <= u": a ranged row (also "u >= expr >= l").
      double first = lhs.constant;
      Expr mid = expression(false);
      if (mid.terms.empty() && mid.quad.empty()) lex_.fail(line, "constraint has no variables");
      Tok op2 = comparator();
      double second = value(true);
      if (op != op2 || op == Tok::kEq) lex_.fail(line, "a ranged constraint needs two <= or two >=");
      lower = op == Tok::kLe ? first : second;
      upper = op == Tok::kLe ? second : first;
      lower -= mid.constant;
      upper -= mid.constant;
      terms = std::move(mid.terms);
      quad = std::move(mid.quad);
    } else {
      double rhs = value(true) - lhs.constant;
      if (op == Tok::kLe) { lower = -kInf; upper = rhs; }
      else if (op == Tok::kGe) { lower = rhs; upper = kInf; }
      else {
        if (std::isinf(rhs)) lex_.fail(line, "equality with an infinite right-hand side");
        lower = upper = rhs;
      }
      terms = std::move(lhs.terms);
      quad = std::move(lhs.quad);
      if (ends_comparator()) lex_.fail(lex_.peek().line, "a ranged constraint must start with a number");
    }
    if (lower == kInf || upper == -kInf || lower > upper)
      lex_.fail(line, "constraint can never hold (range " + std::to_string(lower) + " .. " +
                          std::to_string(upper) + ")");
    model_.add_row(name, std::move(terms), lower, upper, std::move(quad));
    if (lex_.peek().kind == Tok::kArrow) lex_.fail(lex_.peek().line, "indicator constraints are not supported");
  }

  void set_lower(int j, double v, long line) {
    model_.var(j).lower = v;
    bound_line_[j] = line;
  }
  void set_upper(int j, double v, long line) {
    model_.var(j).upper = v;
    bound_line_[j] = line;
  }

  void apply_bound(int j, Tok op, double v, bool var_on_left, long line) {
    // Normalize to "x op v".
    if (!var_on_left) op = op == Tok::kLe ? Tok::kGe : op == Tok::kGe ? Tok::kLe : op;
    if (op == Tok::kEq) {
      if (std::isinf(v)) lex_.fail(line, "a variable cannot be fixed at infinity");
      set_lower(j, v, line);
      set_upper(j, v, line);
    } else if (op == Tok::kGe) {
      if (v == kInf) lex_.fail(line, "lower bound of +infinity");
      set_lower(j, v, line);
    } else {
      if (v == -kInf) lex_.fail(line, "upper bound of -infinity");
      set_upper(j, v, line);
    }
  }

  void read_bound() {
    const Token& t = lex_.peek();
    long line = t.line;
    bool starts_with_value = t.kind == Tok::kNumber || t.kind == Tok::kPlus || t.kind == Tok::kMinus ||
                             (is_infinity_word(t) && lex_.peek(1).kind != Tok::kName);
    if (!starts_with_value) {
      Token name = lex_.next();
      if (name.kind != Tok::kName) lex_.fail(name.line, "expected a bound, found '" + std::string(name.text) + "'");
      int j = var(name);
      if (lex_.peek().kind == Tok::kName && is_one_of(lex_.peek().text, {"free"})) {
        lex_.next();
        set_lower(j, -kInf, line);
        set_upper(j, kInf, line);
        return;
      }
      Tok op = comparator();
      apply_bound(j, op, value(true), true, line);
      return;
    }
    double v1 = value(true);
    Tok op1 = comparator();
    Token name = lex_.next();
    if (name.kind != Tok::kName) lex_.fail(name.line, "expected a variable in bound");
    int j = var(name);
    apply_bound(j, op1, v1, false, line);
    if (ends_comparator() && lex_.peek().line == line) {
      Tok op2 = comparator();
      double v2 = value(true);
      if (op1 == Tok::kEq || op2 == Tok::kEq) lex_.fail(line, "'=' in a two-sided bound");
      apply_bound(j, op2, v2, true, line);
    }
  }

  void read_integer(bool binary) {
    Token t = lex_.next();
    if (t.kind != Tok::kName) lex_.fail(t.line, "expected a variable name, found '" + std::string(t.text) + "'");
    int j = var(t);
    Variable& v = model_.var(j);
    if (binary) {
      // A binary is 0 or 1 whatever bounds were given before (as in CPLEX); tighter ones stay.
      v.type = VarType::kBinary;
      v.lower = std::max(v.lower, 0.0);
      v.upper = std::min(v.upper, 1.0);
      if (!bound_line_.count(j)) bound_line_[j] = t.line;
    } else if (v.type != VarType::kBinary) {
      v.type = VarType::kInteger;
    }
  }

  // "semi-continuous" lists variables that are 0 or within their bounds.
  void read_semicontinuous() {
    Token t = lex_.next();
    if (t.kind != Tok::kName) lex_.fail(t.line, "expected a variable name, found '" + std::string(t.text) + "'");
    int j = var(t);
    model_.var(j).semicontinuous = true;
    semi_line_[j] = t.line;
  }

  // One set: "name: S1:: x1:1 x2:2" (the type may be left out under a "sos1"/"sos2" header).
  void read_sos() {
    long line = lex_.peek().line;
    SosSet set;
    if (lex_.peek().kind == Tok::kName && lex_.peek(1).kind == Tok::kColon && lex_.peek(2).kind != Tok::kNumber)
      set.name = std::string(label());
    set.type = sos_header_type_;
    const Token& t = lex_.peek();
    if (t.kind == Tok::kName && is_one_of(t.text, {"s1", "s2"}) && lex_.peek(1).kind == Tok::kColon &&
        lex_.peek(2).kind == Tok::kColon) {
      int type = iequals(t.text, "s1") ? 1 : 2;
      if (set.type != 0 && set.type != type) lex_.fail(line, "SOS type differs from the section's");
      set.type = type;
      lex_.next();
      lex_.next();
      lex_.next();
    }
    if (set.type == 0) lex_.fail(line, "an SOS set needs its type: name: S1:: or name: S2::");
    if (set.name.empty()) set.name = "sos" + std::to_string(model_.sos.size() + 1);
    for (const auto& other : model_.sos)
      if (other.name == set.name) lex_.fail(line, "duplicate SOS set name '" + set.name + "'");
    auto at_member = [&] {
      if (lex_.peek().kind != Tok::kName || lex_.peek(1).kind != Tok::kColon) return false;
      Tok k = lex_.peek(2).kind;
      return (k == Tok::kNumber || (k == Tok::kMinus && lex_.peek(3).kind == Tok::kNumber)) && !at_section_or_end();
    };
    while (at_member()) {
      Token member = lex_.next();
      lex_.next();
      double sign = lex_.peek().kind == Tok::kMinus ? (lex_.next(), -1.0) : 1.0;
      double w = sign * lex_.next().value;
      int j = model_.find_var(std::string(member.text));
      if (j < 0) lex_.fail(member.line, "SOS set '" + set.name + "' names unknown variable '" + std::string(member.text) + "'");
      for (size_t k = 0; k < set.vars.size(); ++k) {
        if (set.vars[k] == j) lex_.fail(member.line, "SOS set '" + set.name + "' names '" + std::string(member.text) + "' twice");
        if (set.weights[k] == w) lex_.fail(member.line, "SOS set '" + set.name + "' repeats the weight " + fmt(w));
      }
      if (!std::isfinite(w)) lex_.fail(member.line, "SOS weight is not finite");
      set.vars.push_back(j);
      set.weights.push_back(w);
    }
    if (set.vars.empty()) lex_.fail(line, "SOS set '" + set.name + "' has no members (expected var:weight)");
    model_.sos.push_back(std::move(set));
  }

  void finish_bounds() {
    for (const auto& [j, line] : semi_line_) {
      const Variable& v = model_.var(j);
      if (v.type != VarType::kContinuous)
        lex_.fail(line, "variable '" + v.name + "' is semi-continuous and integer (not supported)");
      if (v.upper == kInf) lex_.fail(line, "semi-continuous variable '" + v.name + "' needs a finite upper bound");
      if (v.lower < 0) lex_.fail(line, "semi-continuous variable '" + v.name + "' has a negative lower bound");
    }
    for (const auto& [j, line] : bound_line_) {
      const Variable& v = model_.var(j);
      if (v.lower > v.upper)
        lex_.fail(line, "variable '" + v.name + "': lower bound " + fmt(v.lower) +
                            " exceeds upper bound " + fmt(v.upper));
    }
  }

  static std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }

  Lexer lex_;
  Model model_;
  std::unordered_map<int, long> bound_line_;
  std::unordered_map<int, long> semi_line_;
  int sos_header_type_ = 0;
};

}  // namespace

Model read_lp(std::string_view text, const std::string& filename, ReadLimit limit) {
  // Reject binary input up front with the line where it starts.
  long line = 1;
  for (unsigned char c : text) {
    if (c == '\n') ++line;
    else if ((c < 0x20 && c != '\t' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f)
      throw InputError(filename, line, "binary data: not an LP file");
  }
  return LpReader(text, filename, limit).read();
}

}  // namespace trex::lp
