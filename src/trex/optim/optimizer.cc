#include "trex/optim/optimizer.h"

#include <cmath>
#include <set>

#include "trex/util/error.h"

namespace trex::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  if (groups_.empty()) throw InputError::field("groups", "at least one parameter group is needed");
  std::set<std::string> names;
  offsets_.push_back(0);
  for (const ParamGroup& g : groups_) {
    std::string where = "group '" + g.name + "'";
    if (g.name.empty()) throw InputError::field("groups", "a group has an empty name");
    if (!names.insert(g.name).second) throw InputError::field("groups", where + " given twice");
    if (g.size < 1)
      throw InputError::field("groups", where + ": size must be positive, got " +
                                            std::to_string(g.size));
    const kernels::AdamWHyper& h = g.hyper;
    if (!(h.lr >= 0) || !(h.beta1 >= 0 && h.beta1 < 1) || !(h.beta2 >= 0 && h.beta2 < 1) ||
        !(h.eps > 0) || !(h.weight_decay >= 0))
      throw InputError::field("groups", where + ": hyperparameters out of range (need lr >= 0, "
                                                "betas in [0, 1), eps > 0, weight_decay >= 0)");
    num_params_ += g.size;
    offsets_.push_back(num_params_);
  }
}

void Optimizer::set_lr(size_t g, float lr) {
  if (g >= groups_.size()) throw InputError::field("group", "no group " + std::to_string(g));
  if (!(lr >= 0)) throw InputError::field("lr", "must be >= 0");
  groups_[g].hyper.lr = lr;
}

std::vector<kernels::AdamWScalars> Optimizer::scalars_for(int64_t t) const {
  std::vector<kernels::AdamWScalars> s;
  for (const ParamGroup& g : groups_) s.push_back(kernels::adamw_scalars(g.hyper, t));
  return s;
}

}  // namespace trex::optim
