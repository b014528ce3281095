// Structural equivalence of two models, after ORGEval (Wang et al., arXiv 2510.27610).
//
// Two formulations are the same when they build the same optimization problem up to the names
// of variables and rows and their order. The test works on a canonical form of each model:
//
//   1. A row with one variable (a * x in [l, u]) becomes a bound on x and disappears; a row
//      with no variable disappears when 0 lies in [l, u] (Gurobi writes such rows, "R1: <= 0")
//      and is counted as an infeasible constant row otherwise. Free rows disappear.
//   2. Binary variables become integer variables with bounds clipped to [0, 1]. A variable in
//      no row, with no objective term, disappears when its bounds admit a value: it cannot
//      change the problem, and Gurobi's LP writer drops such variables (and writes an
//      objective constant as a variable "Constant" fixed at 1).
//   3. A row a'x in [l, u] and its negation -a'x in [-u, -l] are the same constraint; each row
//      is stored in whichever of the two orientations has the smaller sorted coefficient list
//      (then the smaller bound pair). A row equal to its own negation in those terms (x - y = 0)
//      cannot be oriented; its edges carry |coefficient| and the row is marked.
//   4. Numbers are compared to 40 mantissa bits (about 12 significant digits), so a model built
//      from data.json and the LP file Gurobi wrote from it (16 digits) compare equal.
//
// The canonical model is a bipartite graph: variables (colour: type, bounds, objective
// coefficient) and rows (colour: bounds), an edge per nonzero with its coefficient as feature;
// quadratic objective terms join variables, quadratic row terms join a row to a pair.
// Weisfeiler-Lehman colour refinement then recolours every node by its colour and the multiset
// of (edge feature, neighbour colour) until the number of colours stops growing. The model's
// hash combines the objective sense and constant, the counts, the round count and the final
// colour multisets, so it does not depend on names or on row and column order.
//
// Like every WL test this is complete only for graphs WL can tell apart: two non-isomorphic
// models may share a hash (the ORGEval paper classifies its problems as "WL determinable" for
// this reason). Row scaling (2x + 2y <= 4 against x + y <= 2) counts as a difference, as in
// ORGEval, and so does the objective sense (max f against min -f).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/lp/model.h"

namespace trex::lp {

// What the structural test computes for one model; build once, compare many times.
struct StructureSignature {
  uint64_t hash = 0;                // the final WL hash (structure_hash)
  std::vector<uint64_t> rounds;     // histogram hash after round 0, 1, ..., refinement end
  int num_vars = 0;                 // variables left after step 2
  int num_rows = 0;                 // rows left after step 1
  int64_t num_nonzeros = 0;         // linear nonzeros in those rows
  int num_integer = 0;
  int num_bound_rows = 0;           // rows turned into bounds
  int num_infeasible_constant_rows = 0;
  int num_dropped_vars = 0;         // isolated variables removed in step 2
  Sense sense = Sense::kMinimize;
  int64_t objective_constant = 0;   // quantized
  // Sorted feature multisets of round 0, used to explain a difference.
  std::vector<uint64_t> var_features, row_features, coefficients;
};

// REQUIRES: model.validate() would pass (rows normalized, indices in range).
StructureSignature structure_signature(const Model& model);

// A canonical hash independent of names and of row and column order.
uint64_t structure_hash(const Model& model);

// True when the two models have the same canonical graph up to WL refinement. When false and
// `why` is given, it says the first difference found, e.g. "rows: 12 against 13 (after
// single-variable rows became bounds)" or "variables: types, bounds or objective coefficients
// differ (3 of 20 feature values)" or "WL refinement separates them at round 2".
bool structurally_equivalent(const Model& a, const Model& b, std::string* why = nullptr);
bool structurally_equivalent(const StructureSignature& a, const StructureSignature& b,
                             std::string* why = nullptr);

}  // namespace trex::lp
