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

struct ProgramData;  // statement_data.h
// With `data` (program style "statement-data"), the program begins with the statement's data
// block (`name = number` lines in statement order) and writes each coefficient, bound and
// right-hand side that a datum holds as the datum's name; without, every number inline.
std::string write_gurobipy(const lp::Model& model, const ProgramData* data = nullptr);
// Reads a program in the subset write_gurobipy() writes, with or without a data block. Throws
// InputError("<gurobipy>", line, ...) on anything else.
lp::Model read_gurobipy(const std::string& program);

std::string write_math(const lp::Model& model, const Story& story);

}  // namespace trex::ordata
