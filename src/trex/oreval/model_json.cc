// JSON from python/gurobipy to lp::Model; the format is in model_json.h.
#include "trex/oreval/model_json.h"

#include <cmath>
#include <unordered_map>

#include "trex/util/error.h"

namespace trex::oreval {

namespace {

constexpr double kGurobiInfinity = 1e30;

double bound(double v) {
  if (v >= kGurobiInfinity) return lp::kInf;
  if (v <= -kGurobiInfinity) return -lp::kInf;
  return v;
}

// The next suffix to try for each repeated name, so that a model with a million variables
// of one name (legal, and a way to make a quadratic search stall the evaluator) stays linear.
using NextSuffix = std::unordered_map<std::string, int>;

std::string unique_name(const std::string& name, bool is_var, const lp::Model& m, NextSuffix& next) {
  auto taken = [&](const std::string& n) { return is_var ? m.find_var(n) >= 0 : m.find_row(n) >= 0; };
  if (!taken(name)) return name;
  int& k = next.try_emplace(name, 2).first->second;
  for (;; ++k) {
    std::string n = name + "#" + std::to_string(k);
    if (!taken(n)) return n;
  }
}

}  // namespace

lp::Model model_from_json(const nlohmann::json& j, const std::string& file) {
  lp::Model m;
  NextSuffix var_suffix, row_suffix;
  try {
    m.name = j.value("name", "");
    m.sense = j.at("sense").get<std::string>() == "max" ? lp::Sense::kMaximize : lp::Sense::kMinimize;
    m.objective_constant = j.value("constant", 0.0);
    const auto& vars = j.at("vars");
    const int nv = int(vars.size());
    for (const auto& v : vars) {
      std::string type = v.at(3).get<std::string>();
      lp::VarType t = type == "B" ? lp::VarType::kBinary : type == "I" ? lp::VarType::kInteger : lp::VarType::kContinuous;
      double lb = bound(v.at(1).get<double>()), ub = bound(v.at(2).get<double>());
      if (t == lp::VarType::kBinary) {
        lb = std::max(lb, 0.0);
        ub = std::min(ub, 1.0);
      }
      m.add_var(unique_name(v.at(0).get<std::string>(), true, m, var_suffix), lb, ub, t, v.at(4).get<double>());
    }
    auto index = [&](const nlohmann::json& x) {
      int i = x.get<int>();
      if (i < 0 || i >= nv) throw InputError(file, 0, "variable index " + std::to_string(i) + " out of range");
      return i;
    };
    for (const auto& c : j.at("constrs")) {
      std::string sense = c.at(1).get<std::string>();
      double rhs = bound(c.at(2).get<double>());
      const auto& idx = c.at(3);
      const auto& coef = c.at(4);
      if (idx.size() != coef.size()) throw InputError(file, 0, "constraint with unequal index and coefficient lists");
      std::vector<lp::Term> terms;
      for (size_t k = 0; k < idx.size(); ++k) terms.push_back({index(idx[k]), coef[k].get<double>()});
      std::vector<lp::QuadTerm> quad;
      if (c.size() > 5 && c.at(5).is_array())
        for (const auto& q : c.at(5)) {
          int a = index(q.at(0)), b = index(q.at(1));
          quad.push_back({std::min(a, b), std::max(a, b), q.at(2).get<double>()});
        }
      double lo = sense == "<" ? -lp::kInf : rhs, hi = sense == ">" ? lp::kInf : rhs;
      if (sense != "<" && sense != ">" && sense != "=") throw InputError(file, 0, "constraint sense '" + sense + "'");
      m.add_row(unique_name(c.at(0).get<std::string>(), false, m, row_suffix), std::move(terms), lo, hi, lp::merge_quad_terms(std::move(quad)));
    }
    if (j.contains("qobj"))
      for (const auto& q : j.at("qobj")) m.add_objective_quad(index(q.at(0)), index(q.at(1)), q.at(2).get<double>());
    m.objective_quad = lp::merge_quad_terms(std::move(m.objective_quad));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, 0, std::string("malformed model JSON: ") + e.what());
  }
  m.validate();
  return m;
}

}  // namespace trex::oreval
