// CPLEX LP writer. The text is written so that read_lp gives back the same model bit for
// bit: numbers in shortest round-trip form, every variable listed in Bounds (so one that
// appears nowhere else still exists), quadratic objective coefficients doubled inside
// "[ ... ] / 2" (doubling and halving are exact in binary floating point).
//
// Long expressions are broken before a '+' or '-' term, so a continuation line never starts
// with a name and can never be taken for a section keyword.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "trex/lp/lp_format.h"
#include "trex/util/error.h"

namespace trex::lp {

namespace {

constexpr size_t kMaxNameLength = 255;
constexpr size_t kLineWidth = 80;

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Characters other than letters that may start a name (and appear anywhere in one).
bool is_name_symbol(char c) {
  return c != '\0' && std::string_view("_!\"#$%&(),;?@{}|~'`").find(c) != std::string_view::npos;
}

char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (lower_ascii(a[k]) != lower_ascii(b[k])) return false;
  return true;
}

// Words a reader takes for a section header at the start of a line (a name list in
// Generals can put any name there), or for infinity where a number may stand. The first
// words of two-word headers ("subject to", "lazy constraints") are reserved as well.
bool is_reserved_word(std::string_view name) {
  static constexpr std::string_view kWords[] = {
      "minimize", "minimise", "minimum", "min", "maximize", "maximise", "maximum", "max",
      "subject", "such", "st", "s.t.", "st.", "lazy", "user", "bounds", "bound", "general",
      "generals", "gen", "integer", "integers", "binary", "binaries", "bin", "semi", "semis",
      "sos", "sos1", "sos2", "pwlobj", "pwl", "end", "free", "inf", "infinity", "nan"};
  for (std::string_view w : kWords)
    if (iequals(name, w)) return true;
  return false;
}

// The Gurobi dialect writes the objective constant as a term on a variable "Constant" fixed
// at 1, and read_lp reads such a term as the constant. So a variable of that name is fine
// everywhere except in the objective's linear part.
constexpr std::string_view kGurobiConstantName = "Constant";

void append_number(std::string& out, double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

std::string number(double v) {
  std::string s;
  append_number(s, v);
  return s;
}

void check_name(const std::string& name, const std::string& what) {
  if (!is_valid_lp_name(name))
    throw InputError::field(name.empty() ? what : name, "cannot be written as an LP name");
}

// Row names as Model::name_unnamed_rows() would give them, so that a model with unnamed
// rows reads back equal to that model after naming.
std::vector<std::string> row_names(const Model& model) {
  std::vector<std::string> names = model.row_labels();
  for (size_t r = 0; r < names.size(); ++r) check_name(names[r], "row " + std::to_string(r + 1));
  return names;
}

// Builds the text of the LP file, breaking long expressions between pieces.
class LpWriter {
 public:
  explicit LpWriter(const Model& model) : m_(model) {}
  std::string write();

 private:
  // Starts a new line with `text` (a label or a keyword).
  void start_line(std::string_view text);
  // Appends one piece of an expression, breaking the line first if it would get too long.
  void piece(std::string_view text);
  // A linear term "c name", signed; `first` drops a leading '+'.
  void term(double coef, const std::string& name, bool first);
  // "[ ... ]" over the nonzero terms, each coefficient multiplied by `scale`.
  void quad_bracket(const std::vector<QuadTerm>& quad, double scale, bool first);

  void objective();
  void row(int r);
  void bounds();
  void name_list(const char* header, VarType type);
  void semicontinuous();
  void sos();

  const Model& m_;
  std::string out_;
  size_t line_start_ = 0;
  std::vector<std::string> row_names_;
  std::string objective_label_;
};

void LpWriter::start_line(std::string_view text) {
  if (!out_.empty() && out_.back() != '\n') out_ += '\n';
  line_start_ = out_.size();
  out_ += text;
}

void LpWriter::piece(std::string_view text) {
  if (out_.size() - line_start_ + 1 + text.size() > kLineWidth) {
    out_ += "\n  ";
    line_start_ = out_.size() - 2;
  } else {
    out_ += ' ';
  }
  out_ += text;
}

void LpWriter::term(double coef, const std::string& name, bool first) {
  std::string text;
  if (std::signbit(coef)) {
    text = "- ";
  } else if (!first) {
    text = "+ ";
  }
  append_number(text, std::fabs(coef));
  text += ' ';
  text += name;
  piece(text);
}

void LpWriter::quad_bracket(const std::vector<QuadTerm>& quad, double scale, bool first) {
  piece(first ? "[" : "+ [");
  bool first_in = true;
  for (const QuadTerm& q : quad) {
    if (q.coef == 0) continue;
    double c = q.coef * scale;
    if (std::isinf(c)) throw InputError::field(objective_label_, "quadratic coefficient too large");
    const std::string& a = m_.var(q.i).name;
    const std::string& b = m_.var(q.j).name;
    term(c, q.i == q.j ? a + " ^ 2" : a + " * " + b, first_in);
    first_in = false;
  }
  piece("]");
}

bool has_nonzero(const std::vector<QuadTerm>& quad) {
  for (const auto& q : quad)
    if (q.coef != 0) return true;
  return false;
}

std::string LpWriter::write() {
  m_.validate();
  for (int j = 0; j < m_.num_vars(); ++j)
    check_name(m_.var(j).name, "variable " + std::to_string(j + 1));
  row_names_ = row_names(m_);
  objective_label_ = m_.objective_label(row_names_, is_valid_lp_name(m_.objective_name));

  std::string name = m_.name;
  for (char& c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  if (!name.empty()) out_ += "\\ Model " + name + "\n";
  out_ += m_.sense == Sense::kMaximize ? "Maximize\n" : "Minimize\n";
  objective();
  start_line("Subject To");
  for (int r = 0; r < m_.num_rows(); ++r) row(r);
  bounds();
  name_list("Generals", VarType::kInteger);
  name_list("Binaries", VarType::kBinary);
  semicontinuous();
  sos();
  start_line("End\n");
  return std::move(out_);
}

void LpWriter::objective() {
  start_line(" " + objective_label_ + ":");
  bool first = true;
  for (const Variable& v : m_.vars()) {
    if (v.cost == 0) continue;
    if (v.name == kGurobiConstantName)
      throw InputError::field(v.name, "an objective term on this name reads back as a constant");
    term(v.cost, v.name, first);
    first = false;
  }
  if (m_.objective_constant != 0) {
    // A bare number in the objective is its constant.
    std::string text = std::signbit(m_.objective_constant) ? "- " : first ? "" : "+ ";
    append_number(text, std::fabs(m_.objective_constant));
    piece(text);
    first = false;
  }
  auto quad = merge_quad_terms(m_.objective_quad);
  if (has_nonzero(quad)) {
    quad_bracket(quad, 2, first);
    piece("/ 2");
    first = false;
  }
  if (first) {
    // An objective must say something; a zero term is the plainest way.
    if (m_.num_vars() > 0) {
      term(0, m_.var(0).name, true);
    } else {
      piece("0");
    }
  }
}

void LpWriter::row(int r) {
  const Constraint& c = m_.row(r);
  const std::string& name = row_names_[size_t(r)];
  start_line(" " + name + ":");
  RowSense sense = c.sense();
  if (sense == RowSense::kFree) throw InputError::field(name, "free row cannot be written in LP");
  if (sense == RowSense::kRanged) piece(number(c.lower) + " <=");
  bool first = true;
  for (const Term& t : c.terms) {
    term(t.coef, m_.var(t.var).name, first);
    first = false;
  }
  auto quad = merge_quad_terms(c.quad);
  if (has_nonzero(quad)) {
    quad_bracket(quad, 1, first);
    first = false;
  }
  if (first) {
    if (m_.num_vars() == 0)
      throw InputError::field(name, "row without terms in a model without variables");
    term(0, m_.var(0).name, true);
  }
  switch (sense) {
    case RowSense::kLessEqual:
    case RowSense::kRanged: piece("<= " + number(c.upper)); break;
    case RowSense::kGreaterEqual: piece(">= " + number(c.lower)); break;
    case RowSense::kEqual: piece("= " + number(c.lower)); break;
    case RowSense::kFree: break;
  }
}

// Every variable gets a line, so its bounds never depend on a reader's defaults.
void LpWriter::bounds() {
  start_line("Bounds");
  for (const Variable& v : m_.vars()) {
    double lo = v.lower, up = v.upper;
    // Binaries is written after Bounds and means [0, 1] unless bounds said tighter.
    if (v.type == VarType::kBinary && lo == 0 && up == 1) continue;
    if (lo == -kInf && up == kInf) {
      start_line(" " + v.name + " free");
    } else if (lo == up) {
      start_line(" " + v.name + " = " + number(lo));
    } else if (up == kInf) {
      start_line(" " + v.name + " >= " + number(lo));
    } else {
      std::string lower = lo == -kInf ? "-inf" : number(lo);
      start_line(" " + lower + " <= " + v.name + " <= " + number(up));
    }
  }
}

void LpWriter::semicontinuous() {
  bool any = false;
  for (const Variable& v : m_.vars()) {
    if (!v.semicontinuous) continue;
    if (!any) start_line("Semi-continuous");
    any = true;
    start_line(" " + v.name);
  }
}

// "name: S1:: x:1 y:2". The LP format has no place for an SOS priority; it is left out.
void LpWriter::sos() {
  if (m_.sos.empty()) return;
  start_line("SOS");
  for (const SosSet& set : m_.sos) {
    check_name(set.name, "SOS set");
    start_line(" " + set.name + (set.type == 1 ? ": S1::" : ": S2::"));
    for (size_t k = 0; k < set.vars.size(); ++k) {
      std::string member = m_.var(set.vars[k]).name + ":" + number(set.weights[k]);
      if (out_.size() - line_start_ + 1 + member.size() > kLineWidth) start_line("");
      out_ += ' ';
      out_ += member;
    }
  }
}

void LpWriter::name_list(const char* header, VarType type) {
  bool any = false;
  for (const Variable& v : m_.vars()) {
    if (v.type != type) continue;
    if (!any) {
      start_line(header);
      start_line("");
    }
    any = true;
    if (out_.size() - line_start_ + 1 + v.name.size() > kLineWidth) start_line("");
    out_ += ' ';
    out_ += v.name;
  }
}

}  // namespace

bool is_valid_lp_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!is_ascii_letter(name[0]) && !is_name_symbol(name[0])) return false;
  // Brackets must nest: a reader scans "x[a,b]" as one name and stops at a ']' it cannot
  // match, which is what ends a quadratic bracket.
  int depth = 0;
  for (char c : name.substr(1)) {
    if (c == '[') {
      ++depth;
    } else if (c == ']') {
      if (depth == 0) return false;
      --depth;
    } else if (!is_ascii_letter(c) && !is_digit(c) && !is_name_symbol(c) && c != '.') {
      return false;
    }
  }
  return depth == 0 && !is_reserved_word(name);
}

std::string write_lp(const Model& model) { return LpWriter(model).write(); }

}  // namespace trex::lp
