// Generator contracts: what a family promises about the instances it makes.
//
// A contract lists the family's parameters (type, the range the contract allows, the
// default sampling range inside it, and the unit), which feasibility modes it can produce,
// and its problem class. Every parameter is a range [lo, hi]: the generator draws each
// datum (a cost, a capacity) or the instance's size from it. A run may narrow a range, never
// widen it past [min, max]; validate_overrides() says which setting breaks the contract.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trex::ordata {

// Values persisted in samples by name; new values go last.
enum class FeasibilityMode { kFeasible, kInfeasible, kUnbounded };
const char* to_string(FeasibilityMode m);
// Throws InputError::field(field, ...) for an unknown name.
FeasibilityMode feasibility_mode_from(const std::string& name, const std::string& field);

enum class ProblemClass { kLP, kIP, kMILP };
const char* to_string(ProblemClass c);

struct ParamSpec {
  std::string name;
  bool integer = false;  // integer-valued data (counts, whole units)
  double min = 0, max = 0;  // the contract's bounds
  double lo = 0, hi = 0;    // default sampling range, min <= lo <= hi <= max
  int decimals = 0;         // reals are rounded to this many places
  std::string unit;
  std::string doc;
  // Marks the size knob (instance dimension) and the difficulty knob (tightness in [0, 1]).
  enum class Role { kData, kSize, kDifficulty } role = Role::kData;
};

struct Contract {
  std::string family;
  std::string title;  // e.g. "Capacitated facility location"
  ProblemClass problem_class = ProblemClass::kLP;
  std::string version = "1";
  std::vector<ParamSpec> params;
  std::vector<FeasibilityMode> modes;  // feasibility modes this family can produce

  const ParamSpec& param(const std::string& name) const;  // throws std::logic_error if absent
  bool supports(FeasibilityMode m) const;
};

// The ranges a run samples from: the contract's defaults with any overrides applied.
using ParamRanges = std::map<std::string, std::pair<double, double>>;

ParamRanges default_ranges(const Contract& c);
// Applies overrides {name: [lo, hi]} to `ranges`, checking each against the contract.
// Throws InputError::field("<where>.<name>", ...) for an unknown name, lo > hi, a range
// outside [min, max], or a non-integer bound on an integer parameter.
void apply_overrides(const Contract& c, const ParamRanges& overrides, const std::string& where,
                     ParamRanges& ranges);

}  // namespace trex::ordata
