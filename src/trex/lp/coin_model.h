// The one door from a Model to COIN-OR: every back end that loads a model into CLP or CBC
// (cbc_solver.cc, batch_solver.cc, the spatial solver's McCormick relaxation) builds its
// arrays here, so infinities, the minimized sign and the matrix shape are decided once.
#pragma once

#include <vector>

#include "coin/CoinPackedMatrix.hpp"
#include "trex/lp/model.h"

class ClpSimplex;
class OsiSolverInterface;

namespace trex::lp {

// kInf as COIN's infinity.
double coin_bound(double v);

// A column-ordered matrix from (row, column, value) triplets, with exactly `rows` x `cols`
// (the triplet constructor alone sizes it by the largest index seen, dropping empty
// trailing rows and columns).
CoinPackedMatrix coin_matrix(int rows, int cols, const std::vector<int>& row_index,
                             const std::vector<int>& col_index, const std::vector<double>& values);

// The linear part of a model as COIN loads it, minimized (cost = sign * c). Columns
// 0..model_vars-1 are the model's own; a semi-continuous variable x with bounds [l, u] gets
// one more binary column z and the rows x - u z <= 0 and x - l z >= 0 (with x relaxed to
// [0, u]), so any MILP solver reads "x = 0 or l <= x <= u" exactly.
struct CoinArrays {
  CoinPackedMatrix matrix;
  std::vector<double> col_lower, col_upper, cost, row_lower, row_upper;
  std::vector<char> integer;  // one per column
  double sign = 1;            // +1 minimize, -1 maximize
  int model_vars = 0;
  int num_cols() const { return int(col_lower.size()); }
  bool any_integer() const;
};

CoinArrays to_coin(const Model& model);

// Loads the arrays (with `cost`, or zeros when `zero_objective`) into a simplex or an OSI
// solver; the OSI load also marks the integer columns.
void load_coin(const CoinArrays& a, ClpSimplex& clp, bool zero_objective = false);
void load_coin(const CoinArrays& a, OsiSolverInterface& solver, bool zero_objective = false);

}  // namespace trex::lp
