#include "trex/lp/coin_model.h"

#include "coin/ClpSimplex.hpp"
#include "coin/OsiSolverInterface.hpp"

namespace trex::lp {

double coin_bound(double v) {
  if (v == kInf) return COIN_DBL_MAX;
  if (v == -kInf) return -COIN_DBL_MAX;
  return v;
}

CoinPackedMatrix coin_matrix(int rows, int cols, const std::vector<int>& row_index,
                             const std::vector<int>& col_index, const std::vector<double>& values) {
  CoinPackedMatrix m(true, row_index.data(), col_index.data(), values.data(), CoinBigIndex(values.size()));
  m.setDimensions(rows, cols);
  return m;
}

bool CoinArrays::any_integer() const {
  for (char c : integer)
    if (c) return true;
  return false;
}

CoinArrays to_coin(const Model& m) {
  CoinArrays a;
  a.sign = m.sense == Sense::kMinimize ? 1.0 : -1.0;
  const int n = m.num_vars();
  a.model_vars = n;
  std::vector<int> rows, cols;
  std::vector<double> vals;
  rows.reserve(size_t(m.num_nonzeros()));
  cols.reserve(size_t(m.num_nonzeros()));
  vals.reserve(size_t(m.num_nonzeros()));
  for (int j = 0; j < n; ++j) {
    const Variable& v = m.var(j);
    a.col_lower.push_back(coin_bound(v.semicontinuous ? 0.0 : v.lower));
    a.col_upper.push_back(coin_bound(v.upper));
    a.cost.push_back(a.sign * v.cost);
    a.integer.push_back(v.type != VarType::kContinuous);
  }
  for (int r = 0; r < m.num_rows(); ++r) {
    const Constraint& c = m.row(r);
    a.row_lower.push_back(coin_bound(c.lower));
    a.row_upper.push_back(coin_bound(c.upper));
    for (const Term& t : c.terms) {
      rows.push_back(r);
      cols.push_back(t.var);
      vals.push_back(t.coef);
    }
  }
  for (int j = 0; j < n; ++j) {
    const Variable& v = m.var(j);
    if (!v.semicontinuous) continue;
    const int z = a.num_cols(), r = int(a.row_lower.size());
    a.col_lower.push_back(0);
    a.col_upper.push_back(1);
    a.cost.push_back(0);
    a.integer.push_back(1);
    // x - u z <= 0
    rows.insert(rows.end(), {r, r});
    cols.insert(cols.end(), {j, z});
    vals.insert(vals.end(), {1.0, -v.upper});
    a.row_lower.push_back(-COIN_DBL_MAX);
    a.row_upper.push_back(0);
    // x - l z >= 0
    rows.insert(rows.end(), {r + 1, r + 1});
    cols.insert(cols.end(), {j, z});
    vals.insert(vals.end(), {1.0, -v.lower});
    a.row_lower.push_back(0);
    a.row_upper.push_back(COIN_DBL_MAX);
  }
  a.matrix = coin_matrix(int(a.row_lower.size()), a.num_cols(), rows, cols, vals);
  return a;
}

void load_coin(const CoinArrays& a, ClpSimplex& clp, bool zero_objective) {
  std::vector<double> zeros(a.cost.size(), 0.0);
  clp.loadProblem(a.matrix, a.col_lower.data(), a.col_upper.data(),
                  zero_objective ? zeros.data() : a.cost.data(), a.row_lower.data(), a.row_upper.data());
}

void load_coin(const CoinArrays& a, OsiSolverInterface& solver, bool zero_objective) {
  std::vector<double> zeros(a.cost.size(), 0.0);
  solver.loadProblem(a.matrix, a.col_lower.data(), a.col_upper.data(),
                     zero_objective ? zeros.data() : a.cost.data(), a.row_lower.data(), a.row_upper.data());
  for (int j = 0; j < a.num_cols(); ++j)
    if (a.integer[size_t(j)]) solver.setInteger(j);
}

}  // namespace trex::lp
