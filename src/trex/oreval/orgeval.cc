// Fixed-variable folding and tolerant number matching before the WL test; see orgeval.h.
#include "trex/oreval/orgeval.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "trex/lp/structure.h"

namespace trex::oreval {

namespace {

using lp::kInf;

// One pass of step 1. Returns true when it changed anything.
bool fold_once(lp::Model& m) {
  const int nv = m.num_vars();
  std::vector<double> lower(static_cast<size_t>(nv)), upper(static_cast<size_t>(nv));
  for (int j = 0; j < nv; ++j) {
    const lp::Variable& v = m.var(j);
    lower[size_t(j)] = v.lower;
    upper[size_t(j)] = v.upper;
    if (v.type == lp::VarType::kBinary) {
      lower[size_t(j)] = std::max(v.lower, 0.0);
      upper[size_t(j)] = std::min(v.upper, 1.0);
    }
  }
  // Single-variable rows become bounds (as lp/structure's step 1 would, here so that the
  // bounds they give take part in the folding and in the number matching).
  std::vector<char> drop_row(size_t(m.num_rows()), 0);
  bool changed = false;
  for (int r = 0; r < m.num_rows(); ++r) {
    const lp::Constraint& row = m.row(r);
    if (!row.quad.empty()) continue;
    const lp::Term* single = nullptr;
    int nonzero = 0;
    for (const lp::Term& t : row.terms)
      if (t.coef != 0) {
        ++nonzero;
        single = &t;
      }
    if (nonzero != 1) continue;
    double lo = row.lower / single->coef, up = row.upper / single->coef;
    if (single->coef < 0) std::swap(lo, up);
    lower[size_t(single->var)] = std::max(lower[size_t(single->var)], lo);
    upper[size_t(single->var)] = std::min(upper[size_t(single->var)], up);
    drop_row[size_t(r)] = 1;
    changed = true;
  }
  std::vector<char> in_quad(size_t(nv), 0);
  for (const lp::QuadTerm& q : m.objective_quad) in_quad[size_t(q.i)] = in_quad[size_t(q.j)] = 1;
  for (const lp::Constraint& row : m.rows())
    for (const lp::QuadTerm& q : row.quad) in_quad[size_t(q.i)] = in_quad[size_t(q.j)] = 1;
  // Which variables are fixed (an integer one only at an integer value: otherwise the model
  // is infeasible, and folding would hide that).
  std::vector<int> new_index(size_t(nv), -1);
  int kept = 0;
  for (int j = 0; j < nv; ++j) {
    double lo = lower[size_t(j)], up = upper[size_t(j)];
    bool integral = m.var(j).type == lp::VarType::kContinuous || lo == std::round(lo);
    bool fixed = lo == up && std::isfinite(lo) && !in_quad[size_t(j)] && integral;
    if (fixed) changed = true;
    else new_index[size_t(j)] = kept++;
  }
  if (!changed) return false;
  lp::Model out;
  out.name = m.name;
  out.sense = m.sense;
  out.objective_name = m.objective_name;
  out.objective_constant = m.objective_constant;
  for (int j = 0; j < nv; ++j) {
    const lp::Variable& v = m.var(j);
    if (new_index[size_t(j)] < 0) {
      out.objective_constant += v.cost * lower[size_t(j)];
      continue;
    }
    lp::VarType type = v.type == lp::VarType::kBinary ? lp::VarType::kInteger : v.type;
    out.add_var(v.name, lower[size_t(j)], upper[size_t(j)], type, v.cost);
  }
  for (int r = 0; r < m.num_rows(); ++r) {
    if (drop_row[size_t(r)]) continue;
    const lp::Constraint& row = m.row(r);
    double shift = 0;
    std::vector<lp::Term> terms;
    for (const lp::Term& t : row.terms) {
      if (new_index[size_t(t.var)] < 0) shift += t.coef * lower[size_t(t.var)];
      else terms.push_back({new_index[size_t(t.var)], t.coef});
    }
    std::vector<lp::QuadTerm> quad;
    for (const lp::QuadTerm& q : row.quad) quad.push_back({new_index[size_t(q.i)], new_index[size_t(q.j)], q.coef});
    // Rows keep no names: two folded rows may not collide, and names never count here.
    out.add_row("", std::move(terms), row.lower - shift, row.upper - shift, std::move(quad));
  }
  for (const lp::QuadTerm& q : m.objective_quad)
    out.objective_quad.push_back({new_index[size_t(q.i)], new_index[size_t(q.j)], q.coef});
  m = std::move(out);
  return true;
}

// Step 2: every number of both models, by magnitude, grouped into runs within `tol`.
class NumberMatch {
 public:
  void collect(const lp::Model& m) {
    auto add = [&](double v) {
      if (v != 0 && std::isfinite(v)) values_.push_back(std::fabs(v));
    };
    add(m.objective_constant);
    for (const lp::Variable& v : m.vars()) {
      add(v.lower);
      add(v.upper);
      add(v.cost);
    }
    for (const lp::Constraint& row : m.rows()) {
      add(row.lower);
      add(row.upper);
      for (const lp::Term& t : row.terms) add(t.coef);
      for (const lp::QuadTerm& q : row.quad) add(q.coef);
    }
    for (const lp::QuadTerm& q : m.objective_quad) add(q.coef);
  }

  void group(double tol) {
    std::sort(values_.begin(), values_.end());
    values_.erase(std::unique(values_.begin(), values_.end()), values_.end());
    reps_.resize(values_.size());
    for (size_t i = 0; i < values_.size(); ++i)
      reps_[i] = i > 0 && values_[i] - values_[i - 1] <= tol * values_[i] ? reps_[i - 1] : values_[i];
  }

  double operator()(double v) const {
    if (v == 0 || !std::isfinite(v)) return v;
    size_t i = size_t(std::lower_bound(values_.begin(), values_.end(), std::fabs(v)) - values_.begin());
    return v < 0 ? -reps_[i] : reps_[i];
  }

  void apply(lp::Model& m) const {
    const NumberMatch& f = *this;
    m.objective_constant = f(m.objective_constant);
    for (int j = 0; j < m.num_vars(); ++j) {
      lp::Variable& v = m.var(j);
      v.lower = f(v.lower);
      v.upper = f(v.upper);
      v.cost = f(v.cost);
    }
    for (int r = 0; r < m.num_rows(); ++r) {
      lp::Constraint& row = m.row(r);
      row.lower = f(row.lower);
      row.upper = f(row.upper);
      for (lp::Term& t : row.terms) t.coef = f(t.coef);
      for (lp::QuadTerm& q : row.quad) q.coef = f(q.coef);
    }
    for (lp::QuadTerm& q : m.objective_quad) q.coef = f(q.coef);
  }

 private:
  std::vector<double> values_, reps_;
};

}  // namespace

lp::Model orgeval_prepare(const lp::Model& model) {
  lp::Model m = model;
  // Each pass fixes at least one more variable or ends; a bound on the passes keeps a
  // hostile model (a long chain of two-variable rows) from costing quadratic time.
  for (int pass = 0; pass < 8 && fold_once(m); ++pass) {
  }
  return m;
}

bool orgeval_equivalent_prepared(const lp::Model& a, const lp::Model& b, std::string* why, double rel_tol) {
  NumberMatch match;
  match.collect(a);
  match.collect(b);
  match.group(rel_tol);
  lp::Model ma = a, mb = b;
  match.apply(ma);
  match.apply(mb);
  return lp::structurally_equivalent(ma, mb, why);
}

bool orgeval_equivalent(const lp::Model& a, const lp::Model& b, std::string* why, double rel_tol) {
  return orgeval_equivalent_prepared(orgeval_prepare(a), orgeval_prepare(b), why, rel_tol);
}

}  // namespace trex::oreval
