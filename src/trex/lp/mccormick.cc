#include "trex/lp/mccormick.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "coin/ClpSimplex.hpp"
#include "trex/lp/coin_model.h"

namespace trex::lp {

namespace {

// Rows in the triplet form CoinPackedMatrix is built from.
struct RowSink {
  std::vector<int> rows, cols;
  std::vector<double> vals, lower, upper;

  void add(std::initializer_list<std::pair<int, double>> terms, double lo, double up) {
    const int r = int(lower.size());
    for (const auto& [c, v] : terms) {
      if (v == 0) continue;
      rows.push_back(r);
      cols.push_back(c);
      vals.push_back(v);
    }
    lower.push_back(lo);
    upper.push_back(up);
  }
};

// The range of x_i * x_j over the box: the extremes of a bilinear function lie at corners.
std::pair<double, double> product_range(double li, double ui, double lj, double uj, bool square) {
  if (square) {
    if (li >= 0) return {li * li, ui * ui};
    if (ui <= 0) return {ui * ui, li * li};
    return {0.0, std::max(li * li, ui * ui)};
  }
  const double c[4] = {li * lj, li * uj, ui * lj, ui * uj};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

}  // namespace

Relaxation::Relaxation(const Model& model, bool zero_objective)
    : num_vars_(model.num_vars()), in_product_(size_t(model.num_vars()), false) {
  sign_ = (!zero_objective && model.sense == Sense::kMaximize) ? -1.0 : 1.0;
  constant_ = zero_objective ? 0.0 : sign_ * model.objective_constant;

  // Products in the order they first appear (objective, then rows): deterministic columns.
  std::map<std::pair<int, int>, int> index;
  auto product_of = [&](const QuadTerm& q) {
    std::pair<int, int> key{std::min(q.i, q.j), std::max(q.i, q.j)};
    auto [it, added] = index.try_emplace(key, int(products_.size()));
    if (added) {
      Product p;
      p.i = key.first;
      p.j = key.second;
      products_.push_back(p);
      in_product_[size_t(p.i)] = in_product_[size_t(p.j)] = true;
    }
    return it->second;
  };
  std::vector<std::pair<int, double>> objective_products;
  if (!zero_objective)
    for (const QuadTerm& q : model.objective_quad)
      if (q.coef != 0) objective_products.push_back({product_of(q), sign_ * q.coef});
  std::vector<std::vector<std::pair<int, double>>> row_products(size_t(model.num_rows()));
  for (int r = 0; r < model.num_rows(); ++r)
    for (const QuadTerm& q : model.row(r).quad)
      if (q.coef != 0) row_products[size_t(r)].push_back({product_of(q), q.coef});

  row_weight_.assign(products_.size(), 0.0);
  cost_.assign(size_t(num_columns()), 0.0);
  if (!zero_objective)
    for (int j = 0; j < num_vars_; ++j) cost_[size_t(j)] = sign_ * model.var(j).cost;
  for (const auto& [k, coef] : objective_products) cost_[size_t(num_vars_ + k)] += coef;
  for (size_t k = 0; k < products_.size(); ++k) {
    const double c = cost_[size_t(num_vars_) + k];
    if (c > 0) products_[k].need_under = true;
    if (c < 0) products_[k].need_over = true;
  }

  for (int r = 0; r < model.num_rows(); ++r) {
    const Constraint& c = model.row(r);
    Row row;
    row.lower = c.lower;
    row.upper = c.upper;
    row.quadratic = !row_products[size_t(r)].empty();
    for (const Term& t : c.terms) {
      row.cols.push_back(t.var);
      row.vals.push_back(t.coef);
    }
    for (const auto& [k, coef] : row_products[size_t(r)]) {
      row.cols.push_back(num_vars_ + k);
      row.vals.push_back(coef);
      add_use(k, coef, c.lower, c.upper);
    }
    rows_.push_back(std::move(row));
  }
  set_objective_scale(1.0);
}

// A row lower <= ... + coef w <= upper gains from a small w when coef > 0 and upper is finite
// (or coef < 0 and lower is finite), and from a large w in the mirrored cases.
void Relaxation::add_use(int k, double coef, double lower, double upper) {
  Product& p = products_[size_t(k)];
  const bool has_upper = upper < kInf, has_lower = lower > -kInf;
  if ((coef > 0 && has_upper) || (coef < 0 && has_lower)) p.need_under = true;
  if ((coef < 0 && has_upper) || (coef > 0 && has_lower)) p.need_over = true;
  double scale = 1;
  if (has_upper) scale = std::max(scale, std::fabs(upper));
  if (has_lower) scale = std::max(scale, std::fabs(lower));
  row_weight_[size_t(k)] = std::max(row_weight_[size_t(k)], std::fabs(coef) / scale);
}

void Relaxation::set_objective_scale(double scale) {
  for (size_t k = 0; k < products_.size(); ++k)
    products_[k].weight = std::max(
        row_weight_[k], std::fabs(cost_[size_t(num_vars_) + k]) / std::max(1.0, std::fabs(scale)));
}

void Relaxation::load(const std::vector<double>& lo, const std::vector<double>& hi,
                      bool envelopes, ClpSimplex& clp) const {
  const int n = num_vars_, ncols = num_columns();
  std::vector<double> col_lower(static_cast<size_t>(ncols)), col_upper(static_cast<size_t>(ncols));
  for (int j = 0; j < n; ++j) {
    col_lower[size_t(j)] = coin_bound(lo[size_t(j)]);
    col_upper[size_t(j)] = coin_bound(hi[size_t(j)]);
  }
  RowSink sink;
  for (const Row& row : rows_) {
    if (row.quadratic && !envelopes) continue;
    const int r = int(sink.lower.size());
    for (size_t t = 0; t < row.cols.size(); ++t) {
      sink.rows.push_back(r);
      sink.cols.push_back(row.cols[t]);
      sink.vals.push_back(row.vals[t]);
    }
    sink.lower.push_back(coin_bound(row.lower));
    sink.upper.push_back(coin_bound(row.upper));
  }
  for (size_t k = 0; k < products_.size(); ++k) {
    const Product& p = products_[k];
    const int w = n + int(k);
    if (!envelopes) {
      col_lower[size_t(w)] = -COIN_DBL_MAX;
      col_upper[size_t(w)] = COIN_DBL_MAX;
      continue;
    }
    const double li = lo[size_t(p.i)], ui = hi[size_t(p.i)];
    const double lj = lo[size_t(p.j)], uj = hi[size_t(p.j)];
    auto [wlo, whi] = product_range(li, ui, lj, uj, p.i == p.j);
    col_lower[size_t(w)] = wlo;
    col_upper[size_t(w)] = whi;
    const double inf = COIN_DBL_MAX;
    if (p.i == p.j) {
      if (p.need_over) sink.add({{w, 1.0}, {p.i, -(li + ui)}}, -inf, -li * ui);  // secant
      if (p.need_under) {
        sink.add({{w, 1.0}, {p.i, -2 * li}}, -li * li, inf);  // tangents below
        if (ui > li) {
          const double mid = 0.5 * (li + ui);
          sink.add({{w, 1.0}, {p.i, -2 * ui}}, -ui * ui, inf);
          sink.add({{w, 1.0}, {p.i, -2 * mid}}, -mid * mid, inf);
        }
      }
      continue;
    }
    if (p.need_under) {
      sink.add({{w, 1.0}, {p.i, -lj}, {p.j, -li}}, -li * lj, inf);
      sink.add({{w, 1.0}, {p.i, -uj}, {p.j, -ui}}, -ui * uj, inf);
    }
    if (p.need_over) {
      sink.add({{w, 1.0}, {p.i, -uj}, {p.j, -li}}, -inf, -li * uj);
      sink.add({{w, 1.0}, {p.i, -lj}, {p.j, -ui}}, -inf, -ui * lj);
    }
  }
  CoinPackedMatrix matrix = coin_matrix(int(sink.lower.size()), ncols, sink.rows, sink.cols, sink.vals);
  clp.loadProblem(matrix, col_lower.data(), col_upper.data(), cost_.data(), sink.lower.data(),
                  sink.upper.data());
}

int Relaxation::add_tangent_cuts(const double* col, ClpSimplex& clp) const {
  std::vector<double> lower, upper, vals;
  std::vector<int> cols;
  std::vector<CoinBigIndex> starts{0};
  for (size_t k = 0; k < products_.size(); ++k) {
    const Product& p = products_[k];
    if (p.i != p.j || !p.need_under) continue;
    const double a = col[p.i], w = col[size_t(num_vars_) + k];
    if (a * a - w <= 1e-9 * std::max(1.0, a * a)) continue;
    cols.push_back(num_vars_ + int(k));
    vals.push_back(1.0);
    if (a != 0) {
      cols.push_back(p.i);
      vals.push_back(-2 * a);
    }
    starts.push_back(CoinBigIndex(cols.size()));
    lower.push_back(-a * a);
    upper.push_back(COIN_DBL_MAX);
  }
  if (!lower.empty())
    clp.addRows(int(lower.size()), lower.data(), upper.data(), starts.data(), cols.data(),
                vals.data());
  return int(lower.size());
}

double Relaxation::violation(int k, const double* col) const {
  const Product& p = products_[size_t(k)];
  const double xx = col[p.i] * col[p.j], w = col[num_vars_ + k];
  double v = 0;
  if (p.need_under) v = std::max(v, xx - w);
  if (p.need_over) v = std::max(v, w - xx);
  return v;
}

}  // namespace trex::lp
