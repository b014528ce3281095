#include "trex/ordata/certificate.h"

#include <cmath>
#include <cstdio>

#include "coin/ClpSimplex.hpp"
#include "coin/CoinPackedMatrix.hpp"

namespace trex::ordata {

namespace {

constexpr double kFeasTol = 1e-6;
constexpr double kDualTol = 1e-7;

double coin(double v) { return v == lp::kInf ? COIN_DBL_MAX : v == -lp::kInf ? -COIN_DBL_MAX : v; }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

}  // namespace

bool objectives_agree(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

bool lp_row_duals(const lp::Model& m, std::vector<double>* y) {
  ClpSimplex clp;  // fresh per model: a reused one carries state that changes the last bits
  const int n = m.num_vars(), rows = m.num_rows();
  const double sign = m.sense == lp::Sense::kMinimize ? 1 : -1;
  std::vector<double> cl(n), cu(n), c(n), rl(rows), ru(rows);
  for (int j = 0; j < n; ++j) {
    cl[j] = coin(m.var(j).lower), cu[j] = coin(m.var(j).upper), c[j] = sign * m.var(j).cost;
  }
  std::vector<int> ri, ci;
  std::vector<double> v;
  for (int r = 0; r < rows; ++r) {
    rl[r] = coin(m.row(r).lower), ru[r] = coin(m.row(r).upper);
    for (const lp::Term& t : m.row(r).terms) ri.push_back(r), ci.push_back(t.var), v.push_back(t.coef);
  }
  CoinPackedMatrix a(true, ri.data(), ci.data(), v.data(), CoinBigIndex(v.size()));
  a.setDimensions(rows, n);
  clp.setLogLevel(0);
  clp.loadProblem(a, cl.data(), cu.data(), c.data(), rl.data(), ru.data());
  clp.dual();
  if (clp.status() != 0) return false;
  y->assign(clp.dualRowSolution(), clp.dualRowSolution() + rows);
  return true;
}

std::string check_optimality_certificate(const lp::Model& m, double objective, const std::vector<double>& x,
                                         const std::vector<double>* y) {
  if (int(x.size()) != m.num_vars()) return "the solution has " + std::to_string(x.size()) + " values for " +
                                            std::to_string(m.num_vars()) + " variables";
  double viol = m.max_violation(x);
  if (viol > kFeasTol) return "the reference solution violates the reconstruction by " + fmt(viol);
  double value = m.objective_value(x);
  if (!objectives_agree(value, objective))
    return "the reference solution has objective " + fmt(value) + " in the reconstruction, not " + fmt(objective);
  if (!y) return "";
  if (int(y->size()) != m.num_rows()) return "dual vector has the wrong size";
  // Dual feasibility and the duality gap, in the minimized form.
  const double sign = m.sense == lp::Sense::kMinimize ? 1 : -1;
  std::vector<double> d(size_t(m.num_vars()));
  for (int j = 0; j < m.num_vars(); ++j) d[size_t(j)] = sign * m.var(j).cost;
  double dual_obj = 0;
  for (int r = 0; r < m.num_rows(); ++r) {
    const lp::Constraint& row = m.row(r);
    double yr = (*y)[size_t(r)];
    for (const lp::Term& t : row.terms) d[size_t(t.var)] -= t.coef * yr;
    if (yr > kDualTol) {
      if (row.lower == -lp::kInf) return "row " + row.name + ": dual " + fmt(yr) + " has the wrong sign for a <= row";
      dual_obj += yr * row.lower;
    } else if (yr < -kDualTol) {
      if (row.upper == lp::kInf) return "row " + row.name + ": dual " + fmt(yr) + " has the wrong sign for a >= row";
      dual_obj += yr * row.upper;
    }
  }
  for (int j = 0; j < m.num_vars(); ++j) {
    const lp::Variable& v = m.var(j);
    double dj = d[size_t(j)];
    double tol = kDualTol * std::max(1.0, std::fabs(v.cost));
    if (dj > tol) {
      if (v.lower == -lp::kInf) return "variable " + v.name + ": reduced cost " + fmt(dj) + " with no lower bound";
      dual_obj += dj * v.lower;
    } else if (dj < -tol) {
      if (v.upper == lp::kInf) return "variable " + v.name + ": reduced cost " + fmt(dj) + " with no upper bound";
      dual_obj += dj * v.upper;
    }
  }
  double primal = sign * (value - m.objective_constant);
  if (!objectives_agree(dual_obj, primal))
    return "duality gap: primal " + fmt(primal) + ", dual " + fmt(dual_obj) + " (minimized form)";
  return "";
}

}  // namespace trex::ordata
