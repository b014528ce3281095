// Executable formulations reconstructed from an instance (the `reference` source): LP text,
// Python against the gurobipy API, and the mathematical model as text.
//
// The gurobipy program is written in a fixed subset of the API (addVar, addConstr, addRange,
// setObjective) that read_gurobipy() reads back into a Model, so the program can be checked
// against the reference without a Gurobi licence: the same model, variable for variable.
#pragma once

#include <string>

#include "trex/lp/model.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

struct Formulations {
  std::string lp;        // CPLEX LP text (lp::write_lp)
  std::string gurobipy;  // a complete Python program
  std::string math;      // sets, parameters, variables, objective, constraints
};

Formulations reconstruct(const lp::Model& model, const Story& story);

std::string write_gurobipy(const lp::Model& model);
// Reads a program in the subset write_gurobipy() writes. Throws InputError("<gurobipy>",
// line, ...) on anything else.
lp::Model read_gurobipy(const std::string& program);

std::string write_math(const lp::Model& model, const Story& story);

}  // namespace trex::ordata
