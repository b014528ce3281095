// The shared shape of a family: a contract, the industries it is phrased in, and a build
// function. A family is data plus that function, not a class of its own.
//
// RecipeFamily::generate draws the size knob and then the difficulty knob (always first,
// in that order, so that a family's stream never depends on how its build function is
// written), records both as the instance's parameters, names the industry in the story,
// and leaves the rest to the build function: the remaining data, the model and the story.
#pragma once

#include <string>
#include <vector>

#include "trex/ordata/family.h"

namespace trex::ordata {

// What a build function gets: the request and the knobs already drawn.
struct BuildContext {
  const Contract& contract;
  FeasibilityMode mode;
  int industry;       // index into the family's industries
  Draw& draw;         // draws the contract's data parameters from the run's ranges
  Rng& rng;           // the sample's stream, for choices that are not parameters
  int size;           // the size knob
  double difficulty;  // the difficulty knob, in [0, 1]
};

// Fills inst.model, inst.story (all but the industry), inst.shape and inst.implied_numbers.
using BuildFunction = void (*)(const BuildContext& ctx, Instance& inst);

class RecipeFamily final : public Family {
 public:
  // REQUIRES: contract has a size and a difficulty parameter; industries.size() >= 4.
  RecipeFamily(Contract contract, std::vector<std::string> industries, BuildFunction build)
      : contract_(std::move(contract)), industries_(std::move(industries)), build_(build) {}

  const Contract& contract() const override { return contract_; }
  std::vector<std::string> industries() const override { return industries_; }
  Instance generate(const ParamRanges& ranges, FeasibilityMode mode, int industry, Rng& rng) const override;

 private:
  Contract contract_;
  std::vector<std::string> industries_;
  BuildFunction build_;
};

// The industry names of a flavour table (any struct with an `industry` field), in order.
template <class Flavor>
std::vector<std::string> industries_of(const std::vector<Flavor>& flavors) {
  std::vector<std::string> v;
  v.reserve(flavors.size());
  for (const Flavor& f : flavors) v.push_back(f.industry);
  return v;
}

}  // namespace trex::ordata
