// ORGEval equivalence as `trex eval` scores it: the canonical graph and Weisfeiler-Lehman test
// of lp/structure.h, on two models first brought to common terms in two steps of our own.
//
//   1. Fixed variables become constants. A row with one variable becomes a bound; then a
//      variable whose bounds meet (lower == upper), in no quadratic term, is replaced by its
//      value: its objective term moves into the objective constant, its row terms into the
//      row bounds. Repeated until nothing changes. So Gurobi's objective "Constant" (a variable
//      fixed at 1) and a plain objective constant are the same, and so are `x == 3` and x
//      replaced by 3.
//   2. Numbers are compared with a relative tolerance, kOrgevalRelTol (1e-9): the magnitudes
//      of every number of both models are sorted and runs in which each value is within the
//      tolerance of the previous one share one representative, with signs kept. Unlike
//      rounding to a fixed number of bits, two values one ulp apart are always together. A long
//      run of values each within 1e-9 of the next is one value, which only a model built to
//      defeat the test has.
//
// Step 2 depends on both models, so the test is pairwise; prepare() (step 1) can be done once
// per model and kept.
#pragma once

#include <string>

#include "trex/lp/model.h"

namespace trex::oreval {

inline constexpr double kOrgevalRelTol = 1e-9;

// Step 1: single-variable rows as bounds, fixed variables folded into constants.
lp::Model orgeval_prepare(const lp::Model& model);

// Step 2 and the WL test on two prepared models. `why` as in lp::structurally_equivalent.
bool orgeval_equivalent_prepared(const lp::Model& a, const lp::Model& b, std::string* why = nullptr,
                                 double rel_tol = kOrgevalRelTol);

// Both steps and the test.
bool orgeval_equivalent(const lp::Model& a, const lp::Model& b, std::string* why = nullptr,
                        double rel_tol = kOrgevalRelTol);

}  // namespace trex::oreval
