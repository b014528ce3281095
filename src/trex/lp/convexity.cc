#include "trex/lp/convexity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace trex::lp {

bool objective_is_convex(const Model& model, std::string* why) {
  if (model.objective_quad.empty()) return true;
  // Dense Hessian over the variables that appear: H = d^2 f / dx^2, so a term c x_i x_j adds
  // c to H_ij and H_ji, and c x_i^2 adds 2c to H_ii.
  std::map<int, int> local;
  for (const auto& q : model.objective_quad) {
    local.emplace(q.i, 0);
    local.emplace(q.j, 0);
  }
  int n = 0;
  for (auto& [var, idx] : local) idx = n++;
  std::vector<int> global(size_t(n), 0);
  for (const auto& [var, idx] : local) global[size_t(idx)] = var;
  std::vector<double> h(size_t(n) * size_t(n), 0.0);
  double sign = model.sense == Sense::kMinimize ? 1.0 : -1.0;
  double scale = 0;
  for (const auto& q : model.objective_quad) {
    int a = local[q.i], b = local[q.j];
    double c = sign * q.coef;
    if (a == b) {
      h[size_t(a) * n + a] += 2 * c;
    } else {
      h[size_t(a) * n + b] += c;
      h[size_t(b) * n + a] += c;
    }
    scale = std::max(scale, std::fabs(c));
  }
  const double tol = 1e-9 * std::max(1.0, scale) * n;
  // Symmetric LDL' with diagonal pivoting: a PSD matrix never needs a negative pivot, and a
  // zero pivot must have a zero column for the matrix to stay PSD.
  std::vector<int> perm(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) perm[size_t(k)] = k;
  auto at = [&](int r, int c) -> double& { return h[size_t(r) * n + c]; };
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int r = k + 1; r < n; ++r)
      if (at(r, r) > at(p, p)) p = r;
    if (p != k) {
      for (int c = 0; c < n; ++c) std::swap(at(k, c), at(p, c));
      for (int r = 0; r < n; ++r) std::swap(at(r, k), at(r, p));
      std::swap(perm[size_t(k)], perm[size_t(p)]);
    }
    double d = at(k, k);
    if (d < -tol) {
      if (why)
        *why = "negative curvature along " + model.var(global[size_t(perm[size_t(k)])]).name;
      return false;
    }
    if (d <= tol) {
      for (int r = k + 1; r < n; ++r) {
        if (std::fabs(at(r, k)) > tol) {
          if (why)
            *why = "indefinite coupling of " + model.var(global[size_t(perm[size_t(k)])]).name +
                   " and " + model.var(global[size_t(perm[size_t(r)])]).name;
          return false;
        }
      }
      continue;
    }
    for (int r = k + 1; r < n; ++r) {
      double l = at(r, k) / d;
      if (l == 0) continue;
      for (int c = k + 1; c < n; ++c) at(r, c) -= l * at(k, c);
    }
  }
  return true;
}

}  // namespace trex::lp
