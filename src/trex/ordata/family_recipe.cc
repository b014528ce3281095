#include "trex/ordata/family_recipe.h"

namespace trex::ordata {

Instance RecipeFamily::generate(const ParamRanges& ranges, FeasibilityMode mode, int industry, Rng& rng) const {
  Draw draw(contract_, ranges, rng);
  const int size = draw.count("size");
  const double difficulty = draw("difficulty");
  Instance inst;
  inst.params = {{"size", size}, {"difficulty", difficulty}};
  inst.model.name = contract_.family;
  inst.story.industry = industries_[size_t(industry)];
  build_({contract_, mode, industry, draw, rng, size, difficulty}, inst);
  return inst;
}

}  // namespace trex::ordata
