#include "trex/ordata/contract.h"

#include <cmath>
#include <stdexcept>

#include "trex/ordata/family.h"
#include "trex/ordata/story.h"
#include "trex/util/error.h"

namespace trex::ordata {

const char* to_string(FeasibilityMode m) {
  switch (m) {
    case FeasibilityMode::kFeasible: return "feasible";
    case FeasibilityMode::kInfeasible: return "infeasible";
    case FeasibilityMode::kUnbounded: return "unbounded";
  }
  return "?";
}

FeasibilityMode feasibility_mode_from(const std::string& name, const std::string& field) {
  if (name == "feasible") return FeasibilityMode::kFeasible;
  if (name == "infeasible") return FeasibilityMode::kInfeasible;
  if (name == "unbounded") return FeasibilityMode::kUnbounded;
  throw InputError::field(field, "unknown feasibility mode '" + name +
                                     "' (feasible, infeasible, unbounded)");
}

const char* to_string(ProblemClass c) {
  switch (c) {
    case ProblemClass::kLP: return "LP";
    case ProblemClass::kIP: return "IP";
    case ProblemClass::kMILP: return "MILP";
  }
  return "?";
}

const ParamSpec& Contract::param(const std::string& name) const {
  for (const ParamSpec& p : params)
    if (p.name == name) return p;
  throw std::logic_error("family " + family + " has no parameter " + name);
}

bool Contract::supports(FeasibilityMode m) const {
  for (FeasibilityMode x : modes)
    if (x == m) return true;
  return false;
}

ParamRanges default_ranges(const Contract& c) {
  ParamRanges r;
  for (const ParamSpec& p : c.params) r[p.name] = {p.lo, p.hi};
  return r;
}

void apply_overrides(const Contract& c, const ParamRanges& overrides, const std::string& where,
                     ParamRanges& ranges) {
  for (const auto& [name, range] : overrides) {
    const std::string field = where + "." + name;
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& p : c.params)
      if (p.name == name) spec = &p;
    if (!spec) throw InputError::field(field, "family " + c.family + " has no parameter '" + name + "'");
    auto [lo, hi] = range;
    if (!(lo <= hi)) throw InputError::field(field, "lower end " + num(lo) + " exceeds upper end " + num(hi));
    if (lo < spec->min || hi > spec->max)
      throw InputError::field(field, "[" + num(lo) + ", " + num(hi) + "] is outside the contract's range [" +
                                         num(spec->min) + ", " + num(spec->max) + "]" +
                                         (spec->unit.empty() ? "" : " " + spec->unit));
    if (spec->integer && (lo != std::floor(lo) || hi != std::floor(hi)))
      throw InputError::field(field, "this parameter takes whole numbers");
    ranges[name] = {lo, hi};
  }
}

double Draw::operator()(const std::string& param) {
  const ParamSpec& spec = contract_.param(param);
  auto [lo, hi] = ranges_.at(param);
  if (spec.integer) return double(rng_.integer(long(lo), long(hi)));
  return rng_.real(lo, hi, spec.decimals);
}

ParamSpec size_param(double min, double max, double lo, double hi, const std::string& doc) {
  ParamSpec p;
  p.name = "size";
  p.integer = true;
  p.min = min, p.max = max, p.lo = lo, p.hi = hi;
  p.doc = doc;
  p.role = ParamSpec::Role::kSize;
  return p;
}

ParamSpec difficulty_param() {
  ParamSpec p;
  p.name = "difficulty";
  p.min = 0, p.max = 1, p.lo = 0.2, p.hi = 0.8;
  p.decimals = 2;
  p.doc = "tightness: the share of capacity or budget that the requirements take up";
  p.role = ParamSpec::Role::kDifficulty;
  return p;
}

ParamSpec data_param(const std::string& name, bool integer, double min, double max, double lo,
                     double hi, const std::string& unit, const std::string& doc, int decimals) {
  ParamSpec p;
  p.name = name;
  p.integer = integer;
  p.min = min, p.max = max, p.lo = lo, p.hi = hi;
  p.unit = unit;
  p.doc = doc;
  p.decimals = integer ? 0 : decimals;
  return p;
}

}  // namespace trex::ordata
