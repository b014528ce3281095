// A linear relaxation of a quadratic model over a box, for the spatial branch-and-bound solver.
//
// Every distinct product x_i * x_j of the model (objective and rows; i < j, or a square i == j)
// becomes one auxiliary column w_k, column num_vars() + k of the relaxation. Over a box
// lo <= x <= hi a bilinear w_k gets McCormick's four inequalities, its convex and concave
// envelopes, which are exact wherever x_i or x_j sits at a bound of the box; a square gets the
// secant above and tangents below (at lo, hi, the midpoint, and cuts added at relaxation
// points). Only the sides a product needs are written: a term that the objective and the rows
// can only gain from pushing below x_i x_j needs under-estimators, one that gains from pushing
// above needs over-estimators. The relaxation is always minimized: sign() * objective.
#pragma once

#include <vector>

#include "trex/lp/model.h"

class ClpSimplex;

namespace trex::lp {

struct Product {
  int i = 0, j = 0;         // i <= j; i == j is a square
  bool need_under = false;  // some use gains when w_k < x_i x_j
  bool need_over = false;   // some use gains when w_k > x_i x_j
  double weight = 0;        // largest |coefficient| / scale of a use, for branching scores
};

class Relaxation {
 public:
  // zero_objective: the relaxation of the feasibility problem (every cost 0).
  Relaxation(const Model& model, bool zero_objective);

  int num_vars() const { return num_vars_; }
  int num_columns() const { return num_vars_ + int(products_.size()); }
  const std::vector<Product>& products() const { return products_; }
  // True when variable j appears in some product.
  bool in_product(int j) const { return in_product_[size_t(j)]; }
  // +1 for a minimized model, -1 for a maximized one (and +1 with a zero objective).
  double sign() const { return sign_; }
  // sign() * the model's objective constant, the part no column carries.
  double objective_constant() const { return constant_; }
  // The minimized objective's coefficient of each column (sign() * cost, products included).
  const std::vector<double>& costs() const { return cost_; }
  // Objective terms are weighted by |coefficient| / scale in Product::weight.
  void set_objective_scale(double scale);

  // Loads the relaxation over [lo, hi] (one entry per model variable) into an empty clp.
  // With envelopes, every variable in a product needs finite bounds. Without them, the rows
  // with quadratic terms are left out and the w columns are free: the relaxation the linear
  // rows alone give, which bound tightening uses before the box is finite.
  void load(const std::vector<double>& lo, const std::vector<double>& hi, bool envelopes,
            ClpSimplex& clp) const;
  // Adds a tangent w_k >= 2 a x_i - a^2 at a = x_i for each square k that needs
  // under-estimators and whose w_k at `col` lies below x_i^2 by more than round-off;
  // returns how many rows were added.
  int add_tangent_cuts(const double* col, ClpSimplex& clp) const;
  // How far w_k is from x_i x_j at `col`, on the sides product k needs (0 when exact).
  double violation(int k, const double* col) const;

 private:
  struct Row {
    std::vector<int> cols;
    std::vector<double> vals;
    double lower, upper;
    bool quadratic;
  };
  void add_use(int k, double coef, double lower, double upper);

  int num_vars_;
  double sign_ = 1;
  double constant_ = 0;
  std::vector<Product> products_;
  std::vector<double> cost_;            // per column, minimized
  std::vector<double> row_weight_;  // per product, its Product::weight from rows alone
  std::vector<Row> rows_;
  std::vector<bool> in_product_;
};

}  // namespace trex::lp
