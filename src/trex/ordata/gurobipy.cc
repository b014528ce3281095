// The gurobipy writer and its reader (see reconstruct.h).
//
// Variables are grouped by the part of their name before '[': make[chair] becomes the
// Python dict entry make["chair"], flow[a,b] becomes flow["a", "b"] (a tuple key). A name
// without brackets is a plain Python variable.
#include <cctype>
#include <charconv>
#include <map>
#include <cmath>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trex/ordata/reconstruct.h"
#include "trex/ordata/statement_data.h"
#include "trex/ordata/story.h"
#include "trex/util/error.h"

namespace trex::ordata {

namespace {

const std::set<std::string>& reserved() {
  static const std::set<std::string> r = {"m", "gp", "GRB", "v", "and", "as", "def", "del", "for", "from", "if",
                                          "in", "is", "not", "or", "print", "abs", "lambda", "None", "True", "False"};
  return r;
}

bool identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// The Python expression that names variable `name`.
std::string reference(const std::string& name, std::set<std::string>* groups) {
  size_t lb = name.find('[');
  std::string base = name.substr(0, lb);
  bool bracket = lb != std::string::npos && name.back() == ']' && identifier(base) && !reserved().count(base);
  if (!bracket) {
    if (identifier(name) && !reserved().count(name)) return name;
    return "v[\"" + name + "\"]";  // anything else lives in the catch-all dict
  }
  if (groups) groups->insert(base);
  std::string inner = name.substr(lb + 1, name.size() - lb - 2);
  std::string key;
  size_t start = 0;
  for (;;) {
    size_t comma = inner.find(',', start);
    key += (start ? ", " : "") + std::string("\"") + inner.substr(start, comma - start) + "\"";
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return base + "[" + key + "]";
}

// `refs`: the Python reference of each variable, by index. `names`: per term, the data name
// written for its coefficient's absolute value ("" or no vector: the number).
std::string expression(const std::vector<std::string>& refs, const std::vector<lp::Term>& terms,
                       const std::vector<std::string>* names = nullptr) {
  std::string s;
  for (size_t k = 0; k < terms.size(); ++k) {
    const lp::Term& t = terms[k];
    double c = t.coef;
    if (c == 0) continue;
    const std::string& ref = refs[size_t(t.var)];
    const std::string* name = names && !(*names)[k].empty() ? &(*names)[k] : nullptr;
    if (s.empty()) {
      s += c == 1 ? "" : c == -1 ? "-" : name ? (c < 0 ? "-" : "") + *name + " * " : num(c) + " * ";
    } else {
      s += c < 0 ? " - " : " + ";
      double a = c < 0 ? -c : c;
      s += a == 1 ? "" : (name ? *name : num(a)) + " * ";
    }
    s += ref;
  }
  return s.empty() ? "0" : s;
}

// `name`: the data name for |v| ("": the number).
std::string bound(double v, const std::string& name = "") {
  if (v == lp::kInf) return "GRB.INFINITY";
  if (v == -lp::kInf) return "-GRB.INFINITY";
  if (!name.empty()) return v < 0 ? "-" + name : name;
  return num(v);
}

}  // namespace

std::string write_gurobipy(const lp::Model& m, const ProgramData* data) {
  std::set<std::string> groups;
  bool catch_all = false;
  std::vector<std::string> refs;
  refs.reserve(size_t(m.num_vars()));
  for (const lp::Variable& v : m.vars()) {
    refs.push_back(reference(v.name, &groups));
    catch_all = catch_all || refs.back().rfind("v[", 0) == 0;
  }
  static const std::string none;
  // The data name written for entry i of a ProgramData field ("" without data: the number).
  auto at = [&](std::vector<std::string> ProgramData::*field, int i) -> const std::string& {
    return data ? (data->*field)[size_t(i)] : none;
  };
  std::string s = "import gurobipy as gp\nfrom gurobipy import GRB\n\n";
  if (data && !data->data.empty()) {
    s += "# Data, in the order the statement gives it\n";
    for (const Datum& d : data->data) s += d.name + " = " + num(d.value) + "\n";
    s += "\n";
  }
  s += "m = gp.Model(\"" + m.name + "\")\n";
  for (const std::string& g : groups) s += g + " = {}\n";
  if (catch_all) s += "v = {}\n";
  s += "\n# Variables\n";
  for (int j = 0; j < m.num_vars(); ++j) {
    const lp::Variable& v = m.var(j);
    const char* type = v.type == lp::VarType::kBinary    ? "GRB.BINARY"
                       : v.type == lp::VarType::kInteger ? "GRB.INTEGER"
                                                         : "GRB.CONTINUOUS";
    s += refs[size_t(j)] + " = m.addVar(lb=" + bound(v.lower, at(&ProgramData::lower, j)) +
         ", ub=" + bound(v.upper, at(&ProgramData::upper, j)) + ", vtype=" + type + ", name=\"" + v.name +
         "\")\n";
  }
  s += "\n# Objective\n";
  std::vector<lp::Term> obj;
  std::vector<std::string> obj_names;
  for (int j = 0; j < m.num_vars(); ++j)
    if (m.var(j).cost != 0) {
      obj.push_back({j, m.var(j).cost});
      obj_names.push_back(at(&ProgramData::cost, j));
    }
  std::string oe = expression(refs, obj, &obj_names);
  if (m.objective_constant != 0) oe += (m.objective_constant < 0 ? " - " : " + ") + num(std::abs(m.objective_constant));
  s += "m.setObjective(" + oe + ", " + (m.sense == lp::Sense::kMaximize ? "GRB.MAXIMIZE" : "GRB.MINIMIZE") + ")\n";
  s += "\n# Constraints\n";
  std::vector<std::string> labels = m.row_labels();
  for (int r = 0; r < m.num_rows(); ++r) {
    const lp::Constraint& c = m.row(r);
    std::string e = expression(refs, c.terms, data ? &data->coef[size_t(r)] : nullptr);
    const std::string name = ", name=\"" + labels[size_t(r)] + "\")\n";
    const std::string lo = bound(c.lower, at(&ProgramData::row_lower, r));
    const std::string hi = bound(c.upper, at(&ProgramData::row_upper, r));
    switch (c.sense()) {
      case lp::RowSense::kLessEqual: s += "m.addConstr(" + e + " <= " + hi + name; break;
      case lp::RowSense::kGreaterEqual: s += "m.addConstr(" + e + " >= " + lo + name; break;
      case lp::RowSense::kEqual: s += "m.addConstr(" + e + " == " + lo + name; break;
      case lp::RowSense::kRanged: s += "m.addRange(" + e + ", " + lo + ", " + hi + name; break;
      case lp::RowSense::kFree: break;  // a free row constrains nothing
    }
  }
  s += "\nm.optimize()\n\n";
  s += "if m.Status == GRB.OPTIMAL:\n";
  s += "    print(f\"objective: {m.ObjVal}\")\n";
  s += "    for var in m.getVars():\n";
  s += "        if abs(var.X) > 1e-9:\n";
  s += "            print(f\"{var.VarName} = {var.X}\")\n";
  s += "elif m.Status == GRB.INFEASIBLE:\n    print(\"infeasible\")\n";
  s += "elif m.Status == GRB.UNBOUNDED:\n    print(\"unbounded\")\n";
  s += "else:\n    print(f\"status {m.Status}\")\n";
  return s;
}

// ---------------------------------------------------------------------------------------
namespace {

// Reads with string_views into the program and the line: the verify stage parses every
// sample's program, and the substrings, a std::map per addVar and a std::string per term
// allocated on every line (an independent parse all the same: the same grammar, the same errors).
class Reader {
 public:
  explicit Reader(const std::string& program) : text_(program) {}

  lp::Model read() {
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) nl = text_.size();
      ++line_;
      std::string_view l = text_.substr(pos, nl - pos);
      pos = nl + 1;
      parse_line(l);
      if (nl == text_.size()) break;
    }
    if (!have_objective_) fail("no m.setObjective(...) call");
    model_.name_unnamed_rows();
    model_.validate();
    return std::move(model_);
  }

 private:
  using sv = std::string_view;
  // addVar's keyword arguments, as views into the line (a later key replaces an earlier one).
  struct Kwargs {
    std::vector<std::pair<sv, sv>> items;
    const sv* find(sv key) const {
      for (size_t i = items.size(); i-- > 0;)
        if (items[i].first == key) return &items[i].second;
      return nullptr;
    }
  };

  [[noreturn]] void fail(const std::string& msg) const { throw InputError("<gurobipy>", line_, msg); }

  static bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }

  void parse_line(sv l) {
    if (l.empty() || l[0] == '#' || starts(l, "import ") || starts(l, "from ") || starts(l, " ") ||
        starts(l, "m = gp.Model(") || starts(l, "m.optimize()") || starts(l, "if m.Status") ||
        starts(l, "elif m.Status") || starts(l, "else:"))
      return;
    if (l.size() > 5 && l.compare(l.size() - 5, 5, " = {}") == 0) return;
    if (size_t p = l.find(" = m.addVar("); p != sv::npos) return add_var(l.substr(0, p), l.substr(p + 12));
    if (size_t p = l.find(" = "); p != sv::npos && name(l.substr(0, p))) return add_datum(l.substr(0, p), l.substr(p + 3));
    if (starts(l, "m.setObjective(")) return set_objective(l.substr(15));
    if (starts(l, "m.addConstr(")) return add_constr(l.substr(12));
    if (starts(l, "m.addRange(")) return add_range(l.substr(11));
    fail("unexpected statement: " + std::string(l.substr(0, 60)));
  }

  // Reads `key=value` arguments up to the closing parenthesis.
  Kwargs kwargs(sv s) {
    Kwargs out;
    if (s.empty() || s.back() != ')') fail("missing ')'");
    sv body = s.substr(0, s.size() - 1);
    size_t i = 0;
    while (i < body.size()) {
      size_t eq = body.find('=', i);
      if (eq == sv::npos) fail("expected key=value");
      sv k = trim(body.substr(i, eq - i));
      size_t end;
      if (eq + 1 < body.size() && body[eq + 1] == '"') {
        end = body.find('"', eq + 2);
        if (end == sv::npos) fail("unterminated string");
        out.items.emplace_back(k, body.substr(eq + 2, end - eq - 2));
        end = body.find(',', end);
      } else {
        end = body.find(',', eq);
        out.items.emplace_back(k, trim(body.substr(eq + 1, end == sv::npos ? sv::npos : end - eq - 1)));
      }
      if (end == sv::npos) break;
      i = end + 1;
    }
    return out;
  }

  static sv trim(sv s) {
    size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
    return a == sv::npos ? sv() : s.substr(a, b - a + 1);
  }

  static bool name(sv s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  // A data block line: `name = number` (statement_data.h).
  void add_datum(sv n, sv value) {
    std::string key(n);
    if (data_.count(key)) fail("data " + key + " defined twice");
    if (refs_.count(key)) fail("data " + key + " is also a variable");
    double v = number(value);
    if (!std::isfinite(v)) fail("data " + key + " is not a finite number");
    data_[std::move(key)] = v;
  }

  // A number, or a data name, optionally negated.
  double number(sv s) {
    sv t = trim(s);
    if (t == "GRB.INFINITY") return lp::kInf;
    if (t == "-GRB.INFINITY") return -lp::kInf;
    if (!data_.empty()) {
      bool neg = !t.empty() && t[0] == '-';
      if (sv n = neg ? t.substr(1) : t; name(n)) {
        auto it = data_.find(std::string(n));
        if (it == data_.end()) fail("unknown data name '" + std::string(n) + "'");
        return neg ? -it->second : it->second;
      }
    }
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size()) fail("not a number: '" + std::string(t) + "'");
    return v;
  }

  void add_var(sv ref, sv args) {
    Kwargs kw = kwargs(args);
    for (const char* k : {"lb", "ub", "vtype", "name"})
      if (!kw.find(k)) fail(std::string("addVar without ") + k);
    sv vtype = *kw.find("vtype");
    lp::VarType type = vtype == "GRB.BINARY"    ? lp::VarType::kBinary
                       : vtype == "GRB.INTEGER" ? lp::VarType::kInteger
                       : vtype == "GRB.CONTINUOUS"
                           ? lp::VarType::kContinuous
                           : (fail("unknown vtype " + std::string(vtype)), lp::VarType::kContinuous);
    std::string key(ref);
    if (refs_.count(key)) fail("variable " + key + " defined twice");
    if (data_.count(key)) fail("variable " + key + " is also a data name");
    double lb = number(*kw.find("lb")), ub = number(*kw.find("ub"));
    refs_[std::move(key)] = model_.add_var(std::string(*kw.find("name")), lb, ub, type);
  }

  // Parses "c * ref + ref - c * ref".
  std::vector<lp::Term> parse_expr(sv e) {
    std::vector<lp::Term> terms;
    size_t i = 0;
    auto skip = [&] { while (i < e.size() && e[i] == ' ') ++i; };
    skip();
    if (e.substr(i) == "0") return terms;
    double sign = 1;
    while (i < e.size()) {
      skip();
      if (i < e.size() && (e[i] == '+' || e[i] == '-')) {
        sign = e[i] == '-' ? -1 : 1;
        ++i;
        skip();
      }
      double coef = 1;
      if (i < e.size() && (std::isdigit(static_cast<unsigned char>(e[i])) || e[i] == '.')) {
        size_t star = e.find(" * ", i);
        if (star == sv::npos) fail("constant term in an expression");
        coef = number(e.substr(i, star - i));
        i = star + 3;
      } else if (size_t sp = e.find(' ', i); !data_.empty() && sp != sv::npos && e.substr(sp, 3) == " * ") {
        coef = number(e.substr(i, sp - i));  // a data name
        i = sp + 3;
      }
      // The reference runs to the matching ']' or to the next space.
      size_t end;
      size_t lb = e.find('[', i), sp = e.find(' ', i);
      if (lb != sv::npos && (sp == sv::npos || lb < sp)) {
        end = e.find(']', lb);
        if (end == sv::npos) fail("missing ']'");
        ++end;
      } else {
        end = sp == sv::npos ? e.size() : sp;
      }
      ref_.assign(e.data() + i, end - i);  // one buffer for every lookup (references outgrow SSO)
      auto it = refs_.find(ref_);
      if (it == refs_.end()) fail("unknown variable " + ref_);
      terms.push_back({it->second, sign * coef});
      i = end;
      sign = 1;
    }
    return terms;
  }

  void set_objective(sv s) {
    size_t comma = s.rfind(", GRB.");
    if (comma == sv::npos || s.back() != ')') fail("setObjective needs a sense");
    sv sense = s.substr(comma + 2, s.size() - comma - 3);
    if (sense == "GRB.MAXIMIZE") model_.sense = lp::Sense::kMaximize;
    else if (sense == "GRB.MINIMIZE") model_.sense = lp::Sense::kMinimize;
    else fail("unknown sense " + std::string(sense));
    sv e = s.substr(0, comma);
    // An objective constant is written last as "+ c" or "- c".
    size_t last = e.find_last_of("+-");
    if (last != sv::npos && last + 2 < e.size() && e.find_first_not_of("0123456789.e+-", last + 2) == sv::npos &&
        e.find('*', last) == sv::npos && e.find('[', last) == sv::npos) {
      model_.objective_constant = (e[last] == '-' ? -1 : 1) * number(e.substr(last + 2));
      e = e.substr(0, last);
    }
    for (const lp::Term& t : parse_expr(e)) model_.var(t.var).cost += t.coef;
    have_objective_ = true;
  }

  std::string take_name(sv& s) {
    size_t p = s.rfind(", name=\"");
    if (p == sv::npos || s.size() < p + 10 || s.compare(s.size() - 2, 2, "\")") != 0) fail("constraint without name=\"...\")");
    std::string name(s.substr(p + 8, s.size() - p - 10));
    s = s.substr(0, p);
    return name;
  }

  void add_constr(sv s) {
    std::string name = take_name(s);
    for (const char* op : {" <= ", " >= ", " == "}) {
      size_t p = s.rfind(op);
      if (p == sv::npos) continue;
      double rhs = number(s.substr(p + 4));
      auto terms = parse_expr(s.substr(0, p));
      if (op[1] == '<') model_.add_le(name, std::move(terms), rhs);
      else if (op[1] == '>') model_.add_ge(name, std::move(terms), rhs);
      else model_.add_eq(name, std::move(terms), rhs);
      return;
    }
    fail("addConstr without <=, >= or ==");
  }

  void add_range(sv s) {
    std::string name = take_name(s);
    size_t c2 = s.rfind(", ");
    size_t c1 = c2 == sv::npos || c2 == 0 ? sv::npos : s.rfind(", ", c2 - 1);
    if (c1 == sv::npos) fail("addRange needs an expression and two bounds");
    double hi = number(s.substr(c2 + 2)), lo = number(s.substr(c1 + 2, c2 - c1 - 2));
    model_.add_row(name, parse_expr(s.substr(0, c1)), lo, hi);
  }

  std::string_view text_;
  long line_ = 0;
  lp::Model model_;
  std::unordered_map<std::string, int> refs_;
  std::unordered_map<std::string, double> data_;  // the data block's names
  std::string ref_;
  bool have_objective_ = false;
};

}  // namespace

lp::Model read_gurobipy(const std::string& program) { return Reader(program).read(); }

}  // namespace trex::ordata
