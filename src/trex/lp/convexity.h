// Is a quadratic objective convex in the direction it is optimized?
//
// A minimized objective needs a positive semidefinite Hessian, a maximized one a negative
// semidefinite one. Checked by an LDL' factorization with symmetric pivoting on the dense
// Hessian of the variables that appear in quadratic terms, with a tolerance relative to
// the largest entry, so round-off in a PSD matrix is not mistaken for non-convexity.
#pragma once

#include <string>

#include "trex/lp/model.h"

namespace trex::lp {

// True when the objective's quadratic part is convex for the model's sense (true when it has
// none). On false, `why` (if given) names a direction of negative curvature's variables.
bool objective_is_convex(const Model& model, std::string* why = nullptr);

}  // namespace trex::lp
