#include "trex/lp/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "trex/util/error.h"

namespace trex::lp {

namespace {

void sort_and_merge(std::vector<Term>& terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.var < b.var; });
  size_t out = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (out > 0 && terms[out - 1].var == terms[k].var) {
      terms[out - 1].coef += terms[k].coef;
    } else {
      terms[out++] = terms[k];
    }
  }
  terms.resize(out);
}

void sort_and_merge(std::vector<QuadTerm>& quad) { quad = merge_quad_terms(std::move(quad)); }

bool bad_number(double v) { return std::isnan(v) || std::isinf(v); }

// The magnitude of the values of `set` outside the best window of nonzeros it allows (one
// member for type 1, two adjacent members for type 2).
double sos_violation(const SosSet& set, const std::vector<double>& x) {
  double total = 0, best = 0;
  const size_t n = set.vars.size();
  for (size_t k = 0; k < n; ++k) {
    double a = std::fabs(x[size_t(set.vars[k])]);
    total += a;
    double window = a + (set.type == 2 && k + 1 < n ? std::fabs(x[size_t(set.vars[k + 1])]) : 0);
    best = std::max(best, window);
  }
  return total - best;
}

}  // namespace

std::vector<QuadTerm> merge_quad_terms(std::vector<QuadTerm> quad) {
  for (auto& q : quad)
    if (q.i > q.j) std::swap(q.i, q.j);
  std::stable_sort(quad.begin(), quad.end(), [](const QuadTerm& a, const QuadTerm& b) {
    return a.i != b.i ? a.i < b.i : a.j < b.j;
  });
  std::vector<QuadTerm> out;
  for (const auto& q : quad) {
    if (!out.empty() && out.back().i == q.i && out.back().j == q.j) {
      out.back().coef += q.coef;
    } else {
      out.push_back(q);
    }
  }
  // A pair that cancels (x*y - y*x) is no quadratic term at all.
  out.erase(std::remove_if(out.begin(), out.end(), [](const QuadTerm& q) { return q.coef == 0; }),
            out.end());
  return out;
}

RowSense Constraint::sense() const {
  bool lo = lower > -kInf, up = upper < kInf;
  if (lo && up) return lower == upper ? RowSense::kEqual : RowSense::kRanged;
  if (lo) return RowSense::kGreaterEqual;
  if (up) return RowSense::kLessEqual;
  return RowSense::kFree;
}

int Model::add_var(const std::string& name, double lower, double upper, VarType type,
                   double cost) {
  if (!name.empty() && var_index_.count(name))
    throw InputError::field(name, "duplicate variable name");
  int j = int(vars_.size());
  if (type == VarType::kBinary) {
    lower = std::max(lower, 0.0);
    upper = std::min(upper, 1.0);
  }
  vars_.push_back(Variable{name, lower, upper, type, cost});
  if (!name.empty()) var_index_.emplace(name, j);
  return j;
}

int Model::var_index_or_add(const std::string& name) {
  auto it = var_index_.find(name);
  if (it != var_index_.end()) return it->second;
  return add_var(name);
}

int Model::find_var(const std::string& name) const {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? -1 : it->second;
}

int Model::add_row(const std::string& name, std::vector<Term> terms, double lower, double upper,
                   std::vector<QuadTerm> quad) {
  if (!name.empty() && row_index_.count(name))
    throw InputError::field(name, "duplicate constraint name");
  int r = int(rows_.size());
  Constraint c;
  c.name = name;
  c.lower = lower;
  c.upper = upper;
  c.terms = std::move(terms);
  c.quad = std::move(quad);
  sort_and_merge(c.terms);
  sort_and_merge(c.quad);
  rows_.push_back(std::move(c));
  if (!name.empty()) row_index_.emplace(name, r);
  return r;
}

int Model::find_row(const std::string& name) const {
  auto it = row_index_.find(name);
  return it == row_index_.end() ? -1 : it->second;
}

std::vector<std::string> Model::row_labels() const {
  std::vector<std::string> labels;
  labels.reserve(rows_.size());
  std::unordered_map<std::string, int> assigned;
  auto taken = [&](const std::string& n) {
    return row_index_.count(n) || var_index_.count(n) || assigned.count(n);
  };
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string name = rows_[r].name;
    if (name.empty()) {
      name = "c" + std::to_string(r + 1);
      for (int bump = 1; taken(name); ++bump)
        name = "c" + std::to_string(r + 1) + "_" + std::to_string(bump);
      assigned.emplace(name, int(r));
    }
    labels.push_back(std::move(name));
  }
  return labels;
}

std::string Model::objective_label(const std::vector<std::string>& rows, bool usable) const {
  std::unordered_map<std::string, int> taken;
  for (const auto& r : rows) taken.emplace(r, 0);
  if (usable && !objective_name.empty() && !taken.count(objective_name)) return objective_name;
  std::string label = "obj";
  for (int bump = 1; taken.count(label); ++bump) label = "obj_" + std::to_string(bump);
  return label;
}

void Model::name_unnamed_rows() {
  std::vector<std::string> labels = row_labels();
  for (size_t r = 0; r < rows_.size(); ++r) {
    if (!rows_[r].name.empty()) continue;
    rows_[r].name = labels[r];
    row_index_.emplace(labels[r], int(r));
  }
}

int Model::add_le(const std::string& name, std::vector<Term> terms, double rhs) {
  return add_row(name, std::move(terms), -kInf, rhs);
}
int Model::add_ge(const std::string& name, std::vector<Term> terms, double rhs) {
  return add_row(name, std::move(terms), rhs, kInf);
}
int Model::add_eq(const std::string& name, std::vector<Term> terms, double rhs) {
  return add_row(name, std::move(terms), rhs, rhs);
}

void Model::add_objective_quad(int i, int j, double coef) {
  if (i > j) std::swap(i, j);
  objective_quad.push_back(QuadTerm{i, j, coef});
}

int64_t Model::num_nonzeros() const {
  int64_t n = 0;
  for (const auto& r : rows_) n += int64_t(r.terms.size());
  return n;
}

int Model::num_integer_vars() const {
  int n = 0;
  for (const auto& v : vars_) n += v.type != VarType::kContinuous;
  return n;
}

int Model::num_semicontinuous_vars() const {
  int n = 0;
  for (const auto& v : vars_) n += v.semicontinuous;
  return n;
}

bool Model::has_quadratic_constraints() const {
  for (const auto& r : rows_)
    if (!r.quad.empty()) return true;
  return false;
}

double Model::objective_value(const std::vector<double>& x) const {
  double v = objective_constant;
  for (size_t j = 0; j < vars_.size() && j < x.size(); ++j) v += vars_[j].cost * x[j];
  for (const auto& q : objective_quad) v += q.coef * x[size_t(q.i)] * x[size_t(q.j)];
  return v;
}

double Model::max_violation(const std::vector<double>& x) const {
  double worst = 0;
  for (size_t j = 0; j < vars_.size(); ++j) {
    const Variable& v = vars_[j];
    if (v.semicontinuous && x[j] == 0) continue;
    worst = std::max({worst, (v.lower - x[j]) / std::max(1.0, std::fabs(v.lower)),
                      (x[j] - v.upper) / std::max(1.0, std::fabs(v.upper))});
    if (v.type != VarType::kContinuous) worst = std::max(worst, std::fabs(x[j] - std::round(x[j])));
  }
  for (const auto& r : rows_) {
    double a = 0;
    for (const auto& t : r.terms) a += t.coef * x[size_t(t.var)];
    for (const auto& q : r.quad) a += q.coef * x[size_t(q.i)] * x[size_t(q.j)];
    worst = std::max({worst, (r.lower - a) / std::max(1.0, std::fabs(r.lower)),
                      (a - r.upper) / std::max(1.0, std::fabs(r.upper))});
  }
  for (const auto& set : sos) worst = std::max(worst, sos_violation(set, x));
  return worst;
}

std::string Model::find_huge_number(double limit) const {
  auto big = [&](double v) { return std::isfinite(v) && std::fabs(v) > limit; };
  auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  if (big(objective_constant)) return "objective constant " + text(objective_constant);
  for (const auto& v : vars_) {
    if (big(v.cost)) return "objective coefficient " + text(v.cost) + " of " + v.name;
    if (big(v.lower) || big(v.upper)) return "a bound of " + v.name;
  }
  for (const auto& q : objective_quad)
    if (big(q.coef)) return "quadratic objective coefficient " + text(q.coef);
  for (const auto& r : rows_) {
    if (big(r.lower) || big(r.upper)) return "the right-hand side of " + r.name;
    for (const auto& t : r.terms)
      if (big(t.coef)) return "coefficient " + text(t.coef) + " in row " + r.name;
    for (const auto& q : r.quad)
      if (big(q.coef)) return "quadratic coefficient " + text(q.coef) + " in row " + r.name;
  }
  return "";
}

void Model::normalize() {
  for (auto& r : rows_) {
    sort_and_merge(r.terms);
    sort_and_merge(r.quad);
  }
  sort_and_merge(objective_quad);
  for (auto& set : sos) {
    std::vector<size_t> order(set.vars.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return set.weights[a] < set.weights[b]; });
    std::vector<int> vars;
    std::vector<double> weights;
    for (size_t k : order) {
      vars.push_back(set.vars[k]);
      weights.push_back(set.weights[k]);
    }
    set.vars = std::move(vars);
    set.weights = std::move(weights);
  }
}

void Model::validate() const {
  const int n = num_vars();
  if (bad_number(objective_constant))
    throw InputError::field(objective_name, "objective constant is not finite");
  for (const auto& v : vars_) {
    if (std::isnan(v.lower) || std::isnan(v.upper))
      throw InputError::field(v.name, "bound is NaN");
    if (v.lower == kInf || v.upper == -kInf)
      throw InputError::field(v.name, "bound is infinite on the wrong side");
    if (v.lower > v.upper)
      throw InputError::field(v.name, "lower bound " + std::to_string(v.lower) +
                                          " exceeds upper bound " + std::to_string(v.upper));
    if (bad_number(v.cost)) throw InputError::field(v.name, "objective coefficient is not finite");
    if (v.type == VarType::kBinary && (v.lower < 0 || v.upper > 1))
      throw InputError::field(v.name, "binary variable with bounds outside [0, 1]");
    if (v.semicontinuous) {
      if (v.type != VarType::kContinuous)
        throw InputError::field(v.name, "a semi-continuous variable cannot be integer");
      if (v.lower < 0) throw InputError::field(v.name, "semi-continuous variable with a negative lower bound");
      if (v.upper == kInf) throw InputError::field(v.name, "semi-continuous variable needs a finite upper bound");
    }
  }
  std::map<std::string, int> sos_names;
  for (const auto& set : sos) {
    if (set.name.empty()) throw InputError::field("SOS", "an SOS set needs a name");
    if (sos_names[set.name]++) throw InputError::field(set.name, "duplicate SOS set name");
    if (set.type != 1 && set.type != 2) throw InputError::field(set.name, "SOS type must be 1 or 2");
    if (set.weights.size() != set.vars.size())
      throw InputError::field(set.name, "SOS set needs one weight per member");
    std::vector<int> members = set.vars;
    std::sort(members.begin(), members.end());
    if (std::adjacent_find(members.begin(), members.end()) != members.end())
      throw InputError::field(set.name, "SOS set names a variable twice");
    std::vector<double> weights = set.weights;
    std::sort(weights.begin(), weights.end());
    if (std::adjacent_find(weights.begin(), weights.end()) != weights.end())
      throw InputError::field(set.name, "SOS weights must be distinct");
    for (size_t k = 0; k < set.vars.size(); ++k) {
      if (set.vars[k] < 0 || set.vars[k] >= n) throw InputError::field(set.name, "SOS member refers to no variable");
      if (bad_number(set.weights[k])) throw InputError::field(set.name, "SOS weight is not finite");
    }
  }
  for (const auto& q : objective_quad) {
    if (q.i < 0 || q.j < 0 || q.i >= n || q.j >= n)
      throw InputError::field(objective_name, "quadratic term refers to no variable");
    if (bad_number(q.coef)) throw InputError::field(objective_name, "quadratic coefficient is not finite");
  }
  for (const auto& r : rows_) {
    if (std::isnan(r.lower) || std::isnan(r.upper)) throw InputError::field(r.name, "right-hand side is NaN");
    if (r.lower == kInf || r.upper == -kInf)
      throw InputError::field(r.name, "right-hand side is infinite on the wrong side");
    if (r.lower > r.upper)
      throw InputError::field(r.name, "range lower end exceeds upper end");
    for (const auto& t : r.terms) {
      if (t.var < 0 || t.var >= n) throw InputError::field(r.name, "term refers to no variable");
      if (bad_number(t.coef)) throw InputError::field(r.name, "coefficient is not finite");
    }
    for (const auto& q : r.quad) {
      if (q.i < 0 || q.j < 0 || q.i >= n || q.j >= n)
        throw InputError::field(r.name, "quadratic term refers to no variable");
      if (bad_number(q.coef)) throw InputError::field(r.name, "quadratic coefficient is not finite");
    }
  }
}

namespace {

// Canonical, name-keyed form of a model for comparison.
struct Canon {
  std::map<std::string, std::tuple<double, double, int, double, bool>> vars;
  // Per set name: type, priority, (member name, weight) in weight order.
  std::map<std::string, std::tuple<int, int, std::vector<std::pair<std::string, double>>>> sos;
  std::map<std::string, std::tuple<double, double, std::map<std::string, double>,
                                   std::map<std::pair<std::string, std::string>, double>>>
      rows;
  std::map<std::pair<std::string, std::string>, double> objective_quad;
};

std::pair<std::string, std::string> pair_key(const Model& m, int i, int j) {
  std::string a = m.var(i).name, b = m.var(j).name;
  if (b < a) std::swap(a, b);
  return {a, b};
}

Canon canonical(const Model& m) {
  Canon c;
  for (const auto& v : m.vars()) c.vars[v.name] = {v.lower, v.upper, int(v.type), v.cost, v.semicontinuous};
  for (const auto& s : m.sos) {
    auto& [type, priority, members] = c.sos[s.name];
    type = s.type;
    priority = s.priority;
    std::vector<size_t> order(s.vars.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.weights[a] < s.weights[b]; });
    for (size_t k : order) members.emplace_back(m.var(s.vars[k]).name, s.weights[k]);
  }
  for (const auto& r : m.rows()) {
    auto& [lo, up, terms, quad] = c.rows[r.name];
    lo = r.lower;
    up = r.upper;
    for (const auto& t : r.terms)
      if (t.coef != 0) terms[m.var(t.var).name] += t.coef;
    for (const auto& q : r.quad)
      if (q.coef != 0) quad[pair_key(m, q.i, q.j)] += q.coef;
  }
  for (const auto& q : m.objective_quad)
    if (q.coef != 0) c.objective_quad[pair_key(m, q.i, q.j)] += q.coef;
  return c;
}

}  // namespace

bool same_model(const Model& a, const Model& b, std::string* why) {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (a.sense != b.sense) return fail("objective sense differs");
  if (a.objective_constant != b.objective_constant) return fail("objective constant differs");
  if (a.num_vars() != b.num_vars()) return fail("variable count differs");
  if (a.num_rows() != b.num_rows()) return fail("row count differs");
  Canon ca = canonical(a), cb = canonical(b);
  for (const auto& [name, v] : ca.vars) {
    auto it = cb.vars.find(name);
    if (it == cb.vars.end()) return fail("variable " + name + " missing");
    if (it->second != v) return fail("variable " + name + " differs (bounds, type, cost or semi-continuity)");
  }
  for (const auto& [name, r] : ca.rows) {
    auto it = cb.rows.find(name);
    if (it == cb.rows.end()) return fail("row " + name + " missing");
    if (it->second != r) return fail("row " + name + " differs");
  }
  if (ca.objective_quad != cb.objective_quad) return fail("quadratic objective differs");
  if (ca.sos != cb.sos) return fail("SOS sets differ");
  return true;
}

const char* to_string(VarType t) {
  switch (t) {
    case VarType::kContinuous: return "continuous";
    case VarType::kInteger: return "integer";
    case VarType::kBinary: return "binary";
  }
  return "?";
}

const char* to_string(Sense s) { return s == Sense::kMinimize ? "minimize" : "maximize"; }

}  // namespace trex::lp
