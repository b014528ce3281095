// A parameterized family of optimization instances and the registry of all families.
//
// generate() is a pure function of its arguments: the same ranges, mode, industry and RNG
// state give the same Instance, on any machine. The Instance carries the model (named
// variables and rows), the Story a renderer phrases, and the contract's expectations that
// the checks compare a reconstruction against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/lp/model.h"
#include "trex/ordata/contract.h"
#include "trex/ordata/rng.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

// What the contract says the formulation must look like.
struct ExpectedShape {
  int continuous = 0, integer = 0, binary = 0;  // variable counts by type
  bool nonnegative = true;                      // every variable has lower bound >= 0
  lp::Sense sense = lp::Sense::kMinimize;
};

struct Instance {
  std::string family;
  FeasibilityMode mode = FeasibilityMode::kFeasible;
  std::vector<std::pair<std::string, double>> params;  // the values drawn (size, difficulty)
  lp::Model model;
  Story story;
  ExpectedShape shape;
  // Coefficients the model derives from stated data rather than stating them (the MTZ
  // constant n - 1, say), each allowed by the reviewer check without appearing in the text.
  std::vector<double> implied_numbers;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual const Contract& contract() const = 0;
  // The industries this family phrases its statements in (at least four).
  virtual std::vector<std::string> industries() const = 0;
  // REQUIRES: contract().supports(mode), 0 <= industry < industries().size(), ranges valid.
  virtual Instance generate(const ParamRanges& ranges, FeasibilityMode mode, int industry,
                            Rng& rng) const = 0;
};

// Every family, in a fixed order (the order of `trex data families`).
const std::vector<const Family*>& all_families();
// nullptr when unknown.
const Family* find_family(const std::string& name);

// Draws from a contract's ranges: integers uniformly, reals rounded to the parameter's decimals.
class Draw {
 public:
  Draw(const Contract& contract, const ParamRanges& ranges, Rng& rng)
      : contract_(contract), ranges_(ranges), rng_(rng) {}
  double operator()(const std::string& param);
  int count(const std::string& param) { return int((*this)(param)); }
  Rng& rng() { return rng_; }

 private:
  const Contract& contract_;
  const ParamRanges& ranges_;
  Rng& rng_;
};

// The common knobs every family has, so that contracts read alike.
ParamSpec size_param(double min, double max, double lo, double hi, const std::string& doc);
ParamSpec difficulty_param();
ParamSpec data_param(const std::string& name, bool integer, double min, double max, double lo,
                     double hi, const std::string& unit, const std::string& doc, int decimals = 0);

}  // namespace trex::ordata
