// Verifying a reconstruction by certificate instead of re-solving it.
//
// For an LP, a primal point x and row duals y prove optimality on their own: x satisfies
// the rows and bounds, the reduced costs c - A'y have the signs the bounds allow, and the
// primal and dual objectives agree. Checking that on the reconstructed model is as strict as
// solving it again, and takes microseconds. For a MILP, x feasible with the reference
// objective proves the optimum only together with model identity (the reconstruction equals
// the reference, coefficient for coefficient); otherwise the reconstruction is re-solved.
#pragma once

#include <string>
#include <vector>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"

namespace trex::ordata {

// Row duals of an optimal LP in the minimized form (a maximized model's costs negated), from
// CLP. Returns false when CLP does not end optimal.
// REQUIRES: the model is linear with no integer variables.
bool lp_row_duals(const lp::Model& model, std::vector<double>* y);

// Checks x (and, for an LP, the row duals y of the minimized form) as a certificate that
// `objective` is optimal for `model`. Returns "" on success or what failed. Tolerances:
// feasibility 1e-6 relative to max(1, |bound|); objective and duality gap 1e-6 * max(1, |obj|).
std::string check_optimality_certificate(const lp::Model& model, double objective, const std::vector<double>& x,
                                         const std::vector<double>* y);

// Objective agreement as the validation gate defines it: |a - b| <= 1e-6 * max(1, |b|).
bool objectives_agree(double a, double b);

}  // namespace trex::ordata
