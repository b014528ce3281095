// The mathematical model as text: index sets read off the variable names (make[chair] puts
// "chair" into the index set of make), the parameters as the statement's tables give them,
// then variables, objective and constraints in algebraic form.
#include <map>
#include <cmath>
#include <set>

#include "trex/ordata/family_util.h"
#include "trex/lp/lp_format.h"
#include "trex/ordata/reconstruct.h"

namespace trex::ordata {

namespace {

std::string linear(const lp::Model& m, const std::vector<lp::Term>& terms) {
  std::string s;
  for (const lp::Term& t : terms) {
    if (t.coef == 0) continue;
    double a = t.coef < 0 ? -t.coef : t.coef;
    if (s.empty()) s += t.coef < 0 ? "-" : "";
    else s += t.coef < 0 ? " - " : " + ";
    if (a != 1) s += num(a) + " ";
    s += m.var(t.var).name;
  }
  return s.empty() ? "0" : s;
}

std::string domain(const lp::Variable& v) {
  std::string lo = v.lower == -lp::kInf ? "-inf" : num(v.lower), hi = v.upper == lp::kInf ? "inf" : num(v.upper);
  if (v.type == lp::VarType::kBinary && v.lower == 0 && v.upper == 1) return "in {0, 1}";
  std::string t = v.type == lp::VarType::kContinuous ? "real" : "integer";
  if (v.lower == v.upper) return t + ", = " + lo;
  if (v.upper == lp::kInf) return t + ", >= " + lo;
  return t + ", in [" + lo + ", " + hi + "]";
}

}  // namespace

std::string write_math(const lp::Model& m, const Story& story) {
  // Index sets, in order of first appearance.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> members;
  for (const lp::Variable& v : m.vars()) {
    size_t lb = v.name.find('[');
    if (lb == std::string::npos || v.name.back() != ']') continue;
    std::string g = v.name.substr(0, lb), idx = v.name.substr(lb + 1, v.name.size() - lb - 2);
    if (!members.count(g)) groups.push_back(g);
    members[g].push_back(idx);
  }
  std::string s = "Sets\n";
  if (groups.empty()) s += "  (none: every variable is a scalar)\n";
  for (const auto& g : groups) {
    std::string set;
    for (const auto& i : members[g]) set += (set.empty() ? "" : ", ") + i;
    s += "  " + g + "[.] is indexed by {" + set + "}\n";
  }
  s += "\nParameters\n";
  for (const Table& t : story.tables) {
    s += "  " + cap(t.caption) + ":\n";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      s += "    " + t.columns[c] + ": ";
      for (size_t r = 0; r < t.rows.size(); ++r) s += (r ? ", " : "") + t.rows[r] + " = " + t.cells[r][c];
      s += "\n";
    }
  }
  for (const auto& f : story.facts) s += "  " + f + "\n";
  s += "\nVariables\n";
  for (const lp::Variable& v : m.vars()) s += "  " + v.name + ": " + domain(v) + "\n";
  s += "\nObjective\n  ";
  std::vector<lp::Term> obj;
  for (int j = 0; j < m.num_vars(); ++j)
    if (m.var(j).cost != 0) obj.push_back({j, m.var(j).cost});
  s += std::string(m.sense == lp::Sense::kMaximize ? "maximize " : "minimize ") + linear(m, obj);
  if (m.objective_constant != 0) s += (m.objective_constant < 0 ? " - " : " + ") + num(std::abs(m.objective_constant));
  s += "\n\nConstraints\n";
  std::vector<std::string> labels = m.row_labels();
  for (int r = 0; r < m.num_rows(); ++r) {
    const lp::Constraint& c = m.row(r);
    std::string e = linear(m, c.terms);
    s += "  " + labels[size_t(r)] + ": ";
    switch (c.sense()) {
      case lp::RowSense::kLessEqual: s += e + " <= " + num(c.upper); break;
      case lp::RowSense::kGreaterEqual: s += e + " >= " + num(c.lower); break;
      case lp::RowSense::kEqual: s += e + " = " + num(c.lower); break;
      case lp::RowSense::kRanged: s += num(c.lower) + " <= " + e + " <= " + num(c.upper); break;
      case lp::RowSense::kFree: s += e + " (free)"; break;
    }
    s += "\n";
  }
  return s;
}

Formulations reconstruct(const lp::Model& model, const Story& story) {
  Formulations f;
  f.lp = lp::write_lp(model);
  f.gurobipy = write_gurobipy(model);
  f.math = write_math(model, story);
  return f;
}

}  // namespace trex::ordata
