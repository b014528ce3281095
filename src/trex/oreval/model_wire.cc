// lp::Model to bytes and back for the solve helper; the format is in model_wire.h.
#include "trex/oreval/model_wire.h"

#include <cmath>

#include "nlohmann/json.hpp"
#include "trex/util/error.h"

namespace trex::oreval {

namespace {

using nlohmann::json;

json wire_number(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

double wire_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  std::string s = j.get<std::string>();
  if (s == "inf") return lp::kInf;
  if (s == "-inf") return -lp::kInf;
  if (s == "nan") return std::nan("");
  throw std::runtime_error("number '" + s + "'");
}

json quad_json(const std::vector<lp::QuadTerm>& quad) {
  json a = json::array();
  for (const auto& q : quad) a.push_back({q.i, q.j, wire_number(q.coef)});
  return a;
}

std::vector<lp::QuadTerm> quad_terms(const json& a, int nv) {
  std::vector<lp::QuadTerm> quad;
  quad.reserve(a.size());
  for (const auto& q : a) {
    int i = q.at(0).get<int>(), j = q.at(1).get<int>();
    if (i < 0 || j < 0 || i >= nv || j >= nv) throw std::runtime_error("quadratic term index out of range");
    quad.push_back({i, j, wire_double(q.at(2))});
  }
  return quad;
}

const char* type_code(lp::VarType t) {
  return t == lp::VarType::kBinary ? "B" : t == lp::VarType::kInteger ? "I" : "C";
}

}  // namespace

std::string model_to_wire(const lp::Model& m) {
  json vars = json::array(), rows = json::array(), sos = json::array();
  for (const auto& v : m.vars())
    vars.push_back({v.name, wire_number(v.lower), wire_number(v.upper), type_code(v.type), wire_number(v.cost),
                    v.semicontinuous});
  for (const auto& r : m.rows()) {
    json terms = json::array();
    for (const auto& t : r.terms) terms.push_back({t.var, wire_number(t.coef)});
    rows.push_back({r.name, wire_number(r.lower), wire_number(r.upper), std::move(terms), quad_json(r.quad)});
  }
  for (const auto& s : m.sos) {
    json w = json::array();
    for (double d : s.weights) w.push_back(wire_number(d));
    sos.push_back({s.name, s.type, s.priority, s.vars, std::move(w)});
  }
  json j = {{"name", m.name},
            {"sense", m.sense == lp::Sense::kMaximize ? "max" : "min"},
            {"objective_name", m.objective_name},
            {"constant", wire_number(m.objective_constant)},
            {"vars", std::move(vars)},
            {"rows", std::move(rows)},
            {"qobj", quad_json(m.objective_quad)},
            {"sos", std::move(sos)}};
  std::string bytes;
  json::to_cbor(j, bytes);
  return bytes;
}

lp::Model model_from_wire(const std::string& bytes, const std::string& file) {
  lp::Model m;
  try {
    json j = json::from_cbor(bytes);
    m.name = j.at("name").get<std::string>();
    std::string sense = j.at("sense").get<std::string>();
    if (sense != "min" && sense != "max") throw std::runtime_error("sense '" + sense + "'");
    m.sense = sense == "max" ? lp::Sense::kMaximize : lp::Sense::kMinimize;
    m.objective_name = j.at("objective_name").get<std::string>();
    m.objective_constant = wire_double(j.at("constant"));
    // Built through add_var/add_row (the name index), then every field set as it was sent:
    // add_var clamps a binary's bounds and add_row sorts terms, which must not change a bit.
    for (const auto& v : j.at("vars")) {
      std::string type = v.at(3).get<std::string>();
      if (type != "C" && type != "I" && type != "B") throw std::runtime_error("variable type '" + type + "'");
      int k = m.add_var(v.at(0).get<std::string>());
      lp::Variable& var = m.var(k);
      var.lower = wire_double(v.at(1));
      var.upper = wire_double(v.at(2));
      var.type = type == "B" ? lp::VarType::kBinary : type == "I" ? lp::VarType::kInteger : lp::VarType::kContinuous;
      var.cost = wire_double(v.at(4));
      var.semicontinuous = v.at(5).get<bool>();
    }
    const int nv = m.num_vars();
    for (const auto& r : j.at("rows")) {
      int k = m.add_row(r.at(0).get<std::string>(), {}, 0, 0);
      lp::Constraint& row = m.row(k);
      row.lower = wire_double(r.at(1));
      row.upper = wire_double(r.at(2));
      row.terms.reserve(r.at(3).size());
      for (const auto& t : r.at(3)) {
        int var = t.at(0).get<int>();
        if (var < 0 || var >= nv) throw std::runtime_error("term index out of range");
        row.terms.push_back({var, wire_double(t.at(1))});
      }
      row.quad = quad_terms(r.at(4), nv);
    }
    m.objective_quad = quad_terms(j.at("qobj"), nv);
    for (const auto& s : j.at("sos")) {
      lp::SosSet set;
      set.name = s.at(0).get<std::string>();
      set.type = s.at(1).get<int>();
      set.priority = s.at(2).get<int>();
      set.vars = s.at(3).get<std::vector<int>>();
      for (int var : set.vars)
        if (var < 0 || var >= nv) throw std::runtime_error("SOS member index out of range");
      for (const auto& w : s.at(4)) set.weights.push_back(wire_double(w));
      m.sos.push_back(std::move(set));
    }
  } catch (const InputError&) {
    throw;  // a duplicate name, from add_var/add_row
  } catch (const std::exception& e) {
    throw InputError(file, 0, std::string("malformed model: ") + e.what());
  }
  return m;
}

}  // namespace trex::oreval
