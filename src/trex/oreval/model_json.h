// The model the gurobipy-compatible module records, as JSON, turned into an lp::Model.
//
//   {"name": str, "sense": "min"|"max", "constant": c,
//    "vars":    [[name, lb, ub, "C"|"B"|"I", cost], ...],
//    "constrs": [[name, "<"|">"|"=", rhs, [var index, ...], [coef, ...], [[i, j, q], ...]], ...],
//    "qobj":    [[i, j, q], ...]}
//
// Gurobi's infinity is 1e100; any bound or right-hand side of magnitude >= 1e30 counts as
// infinite, as Gurobi treats it. Duplicate names (legal in gurobipy) get "#2", "#3", ...
#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "trex/lp/model.h"

namespace trex::oreval {

// Throws InputError naming `file` on a malformed document or an index out of range.
lp::Model model_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace trex::oreval
