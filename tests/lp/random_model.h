// A generator of random models for the round-trip tests of the LP and MPS writers.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "trex/lp/model.h"

namespace trex::lp::testing_support {

// Random models exercising everything LP and MPS can say. Values mix small integers,
// full-precision doubles, tiny and huge magnitudes, subnormals and -0, so round trips test
// exactness. Names are decorated in the style the format allows.
class RandomModel {
 public:
  enum class Names { kLp, kMps };
  RandomModel(unsigned seed, Names names) : rng_(seed), names_(names) {}

  Model make() {
    Model m;
    m.name = "random " + std::to_string(rng_() % 1000);
    m.sense = pick(2) ? Sense::kMaximize : Sense::kMinimize;
    m.objective_name = pick(4) == 0 ? "c1" : "cost";  // sometimes collides with a row
    if (pick(3) == 0) m.objective_constant = value();
    int nv = 1 + pick(names_ == Names::kLp ? 12 : 9), nr = pick(9);
    for (int j = 0; j < nv; ++j) add_var(m, j);
    for (int r = 0; r < nr; ++r) add_row(m, r, nv);
    if (pick(3) == 0) {
      for (int k = 0, n = 1 + pick(5); k < n; ++k)
        m.add_objective_quad(pick(nv), pick(nv), nonzero());
    }
    return m;
  }

 private:
  int pick(int n) { return int(rng_() % unsigned(n)); }

  double value() {
    switch (pick(9)) {
      case 0: return pick(21) - 10;
      case 1: return std::uniform_real_distribution<double>(-1000, 1000)(rng_);
      case 2: return std::uniform_real_distribution<double>(-1, 1)(rng_) * 1e-200;
      case 3: return std::uniform_real_distribution<double>(-1, 1)(rng_) * 1e25;
      case 4: return pick(2) ? 5e-324 : -3e-320;
      case 5: return -0.0;
      case 6: return 1.0 / 3.0;
      default: return std::uniform_real_distribution<double>(-10, 10)(rng_);
    }
  }
  double nonzero() {
    double v = value();
    return v == 0 ? 1.5 : v;
  }

  std::string name(char prefix, int k) {
    std::string s = std::string(1, prefix) + std::to_string(k);
    if (names_ == Names::kLp) {
      const char* decorations[] = {"[1]", "[a,b]", ".5", "_x", "#", "{2}", "e5", "(1)", "'", "[[0]]"};
      if (pick(3) == 0) s += decorations[pick(10)];
    } else {
      // Free MPS takes any name without white space.
      const char* odd[] = {"[", "]", ".", "#", "$", "'", "-", "+", "/", "(1,2)"};
      if (pick(4) == 0) s += odd[pick(10)];
    }
    return s;
  }

  void add_var(Model& m, int j) {
    // In LP, names starting with e/E test that "3 e1" is never read as a number.
    std::string n = name(names_ == Names::kLp && pick(5) == 0 ? 'e' : 'x', j);
    VarType type = VarType::kContinuous;
    if (pick(4) == 0) type = VarType::kInteger;
    if (pick(5) == 0) type = VarType::kBinary;
    double lo = 0, up = kInf;
    double a = value(), b = value();
    if (a > b) std::swap(a, b);
    switch (pick(8)) {
      case 0: break;
      case 1: lo = -kInf; break;
      case 2: lo = -kInf, up = b; break;
      case 3: lo = a; break;
      case 4: lo = a, up = b; break;
      case 5: lo = up = a; break;
      case 6: up = std::fabs(b); break;
      default: lo = a, up = a == b ? kInf : b; break;
    }
    if (type == VarType::kBinary) {
      const double binary_bounds[][2] = {{0, 1}, {0, 1}, {0, 0}, {1, 1}, {0, 0.5}, {0.25, 1}};
      int k = pick(6);
      lo = binary_bounds[k][0];
      up = binary_bounds[k][1];
    }
    m.add_var(n, lo, up, type, pick(3) ? value() : 0);
  }

  void add_row(Model& m, int r, int nv) {
    std::vector<Term> terms;
    for (int k = 0, n = pick(nv + 1); k < n; ++k) terms.push_back(Term{pick(nv), value()});
    std::vector<QuadTerm> quad;
    if (pick(4) == 0) {
      for (int k = 0, n = 1 + pick(4); k < n; ++k)
        quad.push_back(QuadTerm{pick(nv), pick(nv), nonzero()});
    }
    double a = value(), b = value();
    if (a > b) std::swap(a, b);
    if (a == b) b = a + 1;
    double lo = -kInf, up = kInf;
    switch (pick(4)) {
      case 0: up = a; break;
      case 1: lo = a; break;
      case 2: lo = up = a; break;
      default: lo = a, up = b; break;
    }
    std::string n = pick(5) == 0 ? "" : name('c', r + 1);  // unnamed rows get c<k>
    if (m.find_row(n) >= 0) n += "_dup";
    m.add_row(n, std::move(terms), lo, up, std::move(quad));
  }

  std::mt19937 rng_;
  Names names_;
};

}  // namespace trex::lp::testing_support
