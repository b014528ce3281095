// Free MPS writer. Everything is written so that read_mps gives back the same model bit for
// bit: numbers in shortest round-trip form, quadratic coefficients scaled only by powers of
// two, ranges chosen so that rhs +- |R| lands exactly on the other end of the row. The one
// exception is a ranged row whose width MPS cannot state exactly (see ranged_form).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "trex/lp/mps_format.h"
#include "trex/util/error.h"

namespace trex::lp {

namespace {

void append_number(std::string& out, double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// A name is one free-MPS field: no white space, nothing a reader would take for binary data.
bool writable_name(const std::string& name) {
  if (name.empty()) return false;
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

void check_name(const std::string& name, const std::string& what) {
  if (!writable_name(name))
    throw InputError::field(name.empty() ? what : name, "cannot be written as an MPS name");
}

// The model name goes on the NAME line as free text; only line breaks and control
// characters could break the file, and the name is not part of the model's meaning.
std::string clean_model_name(const std::string& name) {
  std::string out = name;
  for (char& ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  return out;
}

// Row names as Model::name_unnamed_rows() would give them, so that a model with unnamed
// rows reads back equal to that model after naming.
std::vector<std::string> row_names(const Model& model) {
  std::vector<std::string> names = model.row_labels();
  for (size_t r = 0; r < names.size(); ++r) check_name(names[r], "row " + std::to_string(r + 1));
  return names;
}

// How a row's [lower, upper] is written: a type, a right-hand side and maybe a range.
struct RowForm {
  char type;
  double rhs;
  bool has_range = false;
  double range = 0;
};

// MPS gives a ranged row one end (the rhs) and a width R; the reader computes the other end
// as rhs + |R| (G row) or rhs - |R| (L row). A width whose sum lands exactly on the other
// end is searched near upper - lower, where rounding can need a neighbour. For some pairs
// none exists (lower = -0.6408..., upper = 0.5372... with the two ends on different binary
// grids: R has one bit less than either end), and no MPS text states such a row exactly;
// then the closest width is written, leaving the far end off by an ulp, as every MPS writer
// does. Only a width that cannot come close (beyond the double range) is an error.
double ulp(double v) { return std::nextafter(std::fabs(v), kInf) - std::fabs(v); }

RowForm ranged_form(const std::string& name, double lower, double upper) {
  double guess = upper - lower;
  double candidates[5] = {guess, std::nextafter(guess, kInf), std::nextafter(guess, 0.0), 0, 0};
  candidates[3] = std::nextafter(candidates[1], kInf);
  candidates[4] = std::nextafter(candidates[2], 0.0);
  RowForm best{'G', lower, true, 0};
  double best_miss = kInf;  // in ulps of the end that is computed
  for (double range : candidates) {
    if (!(range > 0) || std::isinf(range)) continue;
    double miss_g = std::fabs((lower + range) - upper) / ulp(upper);
    double miss_l = std::fabs((upper - range) - lower) / ulp(lower);
    if (miss_g == 0) return RowForm{'G', lower, true, range};
    if (miss_l == 0) return RowForm{'L', upper, true, range};
    if (miss_g < best_miss) best_miss = miss_g, best = RowForm{'G', lower, true, range};
    if (miss_l < best_miss) best_miss = miss_l, best = RowForm{'L', upper, true, range};
  }
  if (best_miss <= 1) return best;
  std::string range = "[";
  append_number(range, lower);
  range += ", ";
  append_number(range, upper);
  throw InputError::field(name, "range " + range + "] is too wide to be written in MPS");
}

RowForm row_form(const std::string& name, const Constraint& row) {
  switch (row.sense()) {
    case RowSense::kLessEqual: return RowForm{'L', row.upper};
    case RowSense::kGreaterEqual: return RowForm{'G', row.lower};
    case RowSense::kEqual: return RowForm{'E', row.lower};
    case RowSense::kRanged: return ranged_form(name, row.lower, row.upper);
    case RowSense::kFree: break;
  }
  // An N row would be dropped by any reader: the row would silently disappear.
  throw InputError::field(name, "free row cannot be written in MPS");
}

// Terms merged per variable in stored order, so sums round as same_model() sums them.
struct Entry {
  int row;
  double coef;
};

std::vector<std::vector<Entry>> columns_of(const Model& model) {
  std::vector<std::vector<Entry>> cols(size_t(model.num_vars()));
  for (int r = 0; r < model.num_rows(); ++r) {
    for (const Term& t : model.row(r).terms) {
      auto& col = cols[size_t(t.var)];
      if (!col.empty() && col.back().row == r) {
        col.back().coef += t.coef;
      } else {
        col.push_back(Entry{r, t.coef});
      }
    }
  }
  return cols;
}

class MpsWriter {
 public:
  explicit MpsWriter(const Model& model) : m_(model) {}
  std::string write();

 private:
  void line(std::initializer_list<std::string_view> fields);
  void line_with_value(std::initializer_list<std::string_view> fields, double value);
  void rows();
  void columns();
  void rhs_and_ranges();
  void bounds();
  void bounds_of(const Variable& v);
  void quadratic();
  void sos();

  const Model& m_;
  std::string out_;
  std::vector<std::string> row_names_;
  std::vector<RowForm> forms_;
  std::string objective_;
};

void MpsWriter::line(std::initializer_list<std::string_view> fields) {
  for (std::string_view f : fields) {
    out_ += ' ';
    out_ += f;
  }
  out_ += '\n';
}

void MpsWriter::line_with_value(std::initializer_list<std::string_view> fields, double value) {
  for (std::string_view f : fields) {
    out_ += ' ';
    out_ += f;
  }
  out_ += ' ';
  append_number(out_, value);
  out_ += '\n';
}

std::string MpsWriter::write() {
  m_.validate();
  for (int j = 0; j < m_.num_vars(); ++j)
    check_name(m_.var(j).name, "variable " + std::to_string(j + 1));
  row_names_ = row_names(m_);
  for (const auto& name : row_names_)
    if (name == "'MARKER'") throw InputError::field(name, "cannot be written as an MPS name");
  objective_ = m_.objective_label(row_names_, writable_name(m_.objective_name));
  for (int r = 0; r < m_.num_rows(); ++r)
    forms_.push_back(row_form(row_names_[size_t(r)], m_.row(r)));

  std::string name = clean_model_name(m_.name);
  out_ += name.empty() ? "NAME\n" : "NAME " + name + "\n";
  if (m_.sense == Sense::kMaximize) out_ += "OBJSENSE\n    MAX\n";
  rows();
  columns();
  rhs_and_ranges();
  bounds();
  sos();
  quadratic();
  out_ += "ENDATA\n";
  return std::move(out_);
}

void MpsWriter::rows() {
  out_ += "ROWS\n";
  line({"N", objective_});
  for (size_t r = 0; r < forms_.size(); ++r)
    line({std::string_view(&forms_[r].type, 1), row_names_[r]});
}

void MpsWriter::columns() {
  out_ += "COLUMNS\n";
  auto cols = columns_of(m_);
  bool in_integer_block = false;
  for (int j = 0; j < m_.num_vars(); ++j) {
    const Variable& v = m_.var(j);
    bool integer = v.type != VarType::kContinuous;
    if (integer != in_integer_block) {
      line({"MARKER", "'MARKER'", integer ? "'INTORG'" : "'INTEND'"});
      in_integer_block = integer;
    }
    const auto& col = cols[size_t(j)];
    // A column with no entries at all still has to appear to exist.
    // (A zero cost is written as +0: the reader adds costs up from +0, which drops a -0.)
    if (v.cost != 0 || col.empty()) line_with_value({v.name, objective_}, v.cost + 0.0);
    for (const Entry& e : col) line_with_value({v.name, row_names_[size_t(e.row)]}, e.coef);
  }
  if (in_integer_block) line({"MARKER", "'MARKER'", "'INTEND'"});
}

void MpsWriter::rhs_and_ranges() {
  out_ += "RHS\n";
  if (m_.objective_constant != 0) line_with_value({"RHS", objective_}, -m_.objective_constant);
  for (size_t r = 0; r < forms_.size(); ++r)
    if (forms_[r].rhs != 0) line_with_value({"RHS", row_names_[r]}, forms_[r].rhs);
  bool any_range = false;
  for (size_t r = 0; r < forms_.size(); ++r) {
    if (!forms_[r].has_range) continue;
    if (!any_range) out_ += "RANGES\n";
    any_range = true;
    line_with_value({"RNG", row_names_[r]}, forms_[r].range);
  }
}

void MpsWriter::bounds() {
  out_ += "BOUNDS\n";
  for (const Variable& v : m_.vars()) bounds_of(v);
}

// Bounds that differ from the reader's defaults, in an order that avoids the reader's
// "negative UP with default lower bound" rule: a lower bound is always given first.
void MpsWriter::bounds_of(const Variable& v) {
  double lo = v.lower, up = v.upper;
  if (v.semicontinuous) {  // validate() made it continuous with 0 <= lower, upper finite
    // An SC value of 0 means "no upper bound" to every reader.
    if (up == 0) throw InputError::field(v.name, "semi-continuous upper bound 0 cannot be written in MPS");
    if (lo != 0) line_with_value({"LO", "BND", v.name}, lo);
    line_with_value({"SC", "BND", v.name}, up);
    return;
  }
  if (v.type == VarType::kBinary) {
    line({"BV", "BND", v.name});
    if (lo == up) {
      line_with_value({"FX", "BND", v.name}, lo);
    } else {
      if (lo != 0) line_with_value({"LO", "BND", v.name}, lo);
      if (up != 1) line_with_value({"UP", "BND", v.name}, up);
    }
    return;
  }
  if (lo == -kInf && up == kInf) {
    line({"FR", "BND", v.name});
  } else if (lo == up) {
    line_with_value({"FX", "BND", v.name}, lo);
  } else {
    if (lo == -kInf) line({"MI", "BND", v.name});
    if (lo != -kInf && lo != 0) line_with_value({"LO", "BND", v.name}, lo);
    if (up != kInf) line_with_value({"UP", "BND", v.name}, up);
    // Some readers give integer columns a default upper bound of 1; say "none" outright.
    if (up == kInf && v.type == VarType::kInteger) line({"PL", "BND", v.name});
  }
}

// " S1 SOS name priority" and one "column weight" line per member, which COIN-OR reads too.
void MpsWriter::sos() {
  if (m_.sos.empty()) return;
  out_ += "SOS\n";
  for (const SosSet& set : m_.sos) {
    check_name(set.name, "SOS set");
    out_ += set.type == 1 ? " S1 SOS " : " S2 SOS ";
    out_ += set.name + " " + std::to_string(set.priority) + "\n";
    for (size_t k = 0; k < set.vars.size(); ++k)
      line_with_value({"  ", m_.var(set.vars[k]).name}, set.weights[k]);
  }
}

// QUADOBJ means 0.5 x'Qx over one triangle: a stored x_i^2 coefficient c is Q_ii = 2c and
// an x_i x_j one is Q_ij = c. QCMATRIX means x'Qx over both triangles: Q_ii = c, and
// Q_ij + Q_ji = c, split as h and c - h so the reader's sum is exactly c.
void MpsWriter::quadratic() {
  auto quad = merge_quad_terms(m_.objective_quad);
  if (!quad.empty()) out_ += "QUADOBJ\n";
  for (const QuadTerm& q : quad) {
    double v = q.i == q.j ? 2 * q.coef : q.coef;
    if (std::isinf(v)) throw InputError::field(objective_, "quadratic coefficient too large");
    line_with_value({m_.var(q.i).name, m_.var(q.j).name}, v);
  }
  for (int r = 0; r < m_.num_rows(); ++r) {
    auto rq = merge_quad_terms(m_.row(r).quad);
    if (rq.empty()) continue;
    out_ += "QCMATRIX " + row_names_[size_t(r)] + "\n";
    for (const QuadTerm& q : rq) {
      const std::string& a = m_.var(q.i).name;
      const std::string& b = m_.var(q.j).name;
      if (q.i == q.j) {
        line_with_value({a, a}, q.coef);
      } else {
        double half = q.coef / 2;
        line_with_value({a, b}, half);
        line_with_value({b, a}, q.coef - half);
      }
    }
  }
}

}  // namespace

std::string write_mps(const Model& model) { return MpsWriter(model).write(); }

}  // namespace trex::lp
